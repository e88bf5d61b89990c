"""The GPU catalog against the vendors' datasheets, and its overrides."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvlib.serving.gpus import CATALOG, GiB, closest_gpus, get_gpu, resolve_gpu

# (memory in GB, bandwidth in GB/s) as printed in each vendor datasheet.
DATASHEETS = {
    "A100-80GB": (80, 2039),  # NVIDIA A100 datasheet, SXM
    "H100-80GB": (80, 3350),  # NVIDIA H100 datasheet, SXM: 3.35 TB/s
    "H200": (141, 4800),  # NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s
    "B200": (1440 // 8, 64000 // 8),  # DGX B200: 1,440 GB and 64 TB/s for 8 GPUs
    "B300": (270, 7700),  # Blackwell Ultra datasheet, HGX B300: 270 GB HBM3E, 7.7 TB/s
    "GB200": (13400 // 72, 576000 // 72),  # GB200 NVL72: 13.4 TB, 576 TB/s for 72 GPUs
    "MI300X": (192, 5300),  # AMD MI300X data sheet: 192 GB HBM3, 5.3 TB/s
    "L40S": (48, 864),  # NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s
    "A100-40GB": (40, 1555),  # NVIDIA A100 datasheet, 40GB SXM: 1,555 GB/s
    "H100-NVL": (94, 3900),  # NVIDIA H100 datasheet, NVL: 94 GB, 3.9 TB/s
    "MI325X": (256, 6000),  # AMD MI325X data sheet: 256 GB HBM3E, 6 TB/s
    "L4": (24, 300),  # NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s
    # GeForce specifications give the bus and data rate: 384 bit x 21 Gbps / 8 = 1,008 GB/s,
    # 512 bit x 28 Gbps / 8 = 1,792 GB/s.
    "RTX-4090": (24, 384 * 21 // 8),
    "RTX-5090": (32, 512 * 28 // 8),
    # Issue 36's parts
    "H100-PCIe": (80, 2000),  # NVIDIA H100 datasheet, PCIe: 80 GB, 2 TB/s
    "H20": (96, 4000),  # NVIDIA MIG guide: H20 96GB; 4.0 TB/s as the press reported it
    "GB300": (279, 8000),  # Blackwell Ultra datasheet, GB300 NVL72: 279 GB, 8 TB/s per GPU
    "MI350X": (288, 8000),  # AMD MI350X data sheet: 288 GB HBM3E, 8 TB/s
    "MI355X": (288, 8000),  # AMD MI355X data sheet: 288 GB HBM3E, 8 TB/s
    "L40": (48, 864),  # NVIDIA L40 datasheet: 48 GB GDDR6, 864 GB/s
    "L20": (48, 864),  # NVIDIA L20 page: 48 GB GDDR6, 864 GB/s
    "A10": (24, 600),  # NVIDIA A10 datasheet: 24 GB GDDR6, 600 GB/s
    "A10G": (24, 600),  # AWS G5: 24 GB per A10G; the A10's 600 GB/s
    "RTX-A6000": (48, 768),  # NVIDIA RTX A6000 datasheet: 48 GB GDDR6, 768 GB/s
    "RTX-6000-Ada": (48, 960),  # NVIDIA RTX 6000 Ada datasheet: 48 GB GDDR6, 960 GB/s
    "RTX-PRO-6000": (96, 1792),  # RTX PRO 6000 Blackwell Workstation: 96 GB GDDR7, 1,792 GB/s
}

# NVIDIA's CUDA compute capability table (developer.nvidia.com/cuda-gpus); None off CUDA.
CAPABILITY = {"A100-40GB": (8, 0), "A100-80GB": (8, 0), "H100-80GB": (9, 0), "H100-NVL": (9, 0),
              "H100-PCIe": (9, 0), "H200": (9, 0), "H20": (9, 0), "B200": (10, 0),
              "GB200": (10, 0), "B300": (10, 3), "GB300": (10, 3), "L40S": (8, 9), "L40": (8, 9),
              "L20": (8, 9), "L4": (8, 9), "RTX-4090": (8, 9), "RTX-6000-Ada": (8, 9),
              "A10": (8, 6), "A10G": (8, 6), "RTX-A6000": (8, 6), "RTX-5090": (12, 0),
              "RTX-PRO-6000": (12, 0), "MI300X": None, "MI325X": None, "MI350X": None,
              "MI355X": None}


@pytest.mark.parametrize("name", list(DATASHEETS))
def test_catalog_matches_datasheet(name):
    gb, gb_per_s = DATASHEETS[name]
    gpu = CATALOG[name]
    assert gpu.hbm_bytes == gb * 1000**3
    assert gpu.bandwidth == gb_per_s * 1000**3
    assert gpu.source  # every entry names its datasheet


def test_sources_read_in_a_markdown_table():
    """Notebook 06's catalog table shows each source up to its first " (": the document's
    name. No source may carry a "|", which would split a Markdown table's row."""
    from kvlib.views.tables import gpu_table

    for gpu in CATALOG.values():
        assert "|" not in gpu.source + gpu.bf16_flops_source + gpu.reported_source, gpu.name
    rows = [r for r in gpu_table().splitlines() if r.startswith("| ")]
    assert len({r.count("|") for r in rows}) == 1  # every row has the header's columns
    assert "| GB200 | 186 GB | 8 TB/s | - | - | NVIDIA GB200 NVL72 product page |" in rows


def test_catalog_is_the_datasheets():
    assert set(DATASHEETS) == set(CATALOG) == set(CAPABILITY)


@pytest.mark.parametrize("name", list(CAPABILITY))
def test_compute_capability(name):
    assert CATALOG[name].cuda_capability == CAPABILITY[name]


def test_blackwell_dense_bf16_is_half_the_printed_sparse_figure():
    """NVIDIA prints Blackwell's Tensor Core peaks with sparsity ("Dense is 1/2 sparse")."""
    assert CATALOG["B300"].bf16_flops == 4.5e15 / 2  # HGX B300: 4.5 PFLOPS sparse
    assert CATALOG["GB200"].bf16_flops == 360e15 / 72 / 2  # NVL72: 360 PFLOPS for 72 GPUs
    assert CATALOG["B200"].bf16_flops == 36e15 / 8 / 2  # HGX B200: 36 PFLOPS for 8 GPUs
    # 13.4 TB / 72 = 186.1 GB: the MIG guide's 186GB, not the preliminary page's 192 GB
    assert CATALOG["GB200"].hbm_bytes == 186 * 1000**3 < 13.4e12 / 72 < 192 * 1000**3


def test_reported_totals_are_more_than_the_decimal_datasheet_figure():
    # nvidia-smi memory.total, in MiB, from public logs
    assert CATALOG["H200"].reported_bytes == 143771 * 1024**2 == 150_754_820_096
    assert CATALOG["A100-80GB"].reported_bytes == 81920 * 1024**2 == 80 * 1024**3
    assert CATALOG["H100-80GB"].reported_bytes == 81559 * 1024**2
    for gpu in CATALOG.values():
        if gpu.reported_bytes is not None:
            assert gpu.reported_bytes > gpu.hbm_bytes and gpu.reported_source


def test_lookup_is_case_insensitive_with_aliases():
    assert get_gpu("h200") is CATALOG["H200"]
    assert get_gpu("a100-80gb").name == "A100-80GB"
    assert get_gpu("mi300x").name == "MI300X"
    assert get_gpu("rtx4090").name == get_gpu("4090").name == "RTX-4090"


# Issue 36: each was planned as another GPU ("H20" as an H200, "L40" as an L40S) or refused
# as a family it is not part of ("A10" as "names 2 parts: A100-40GB, A100-80GB").
SPELLINGS = {
    "H20": ["H20", "h20", "NVIDIA H20", "nvidia-h20", "H20 96GB", "H20-96G"],
    "L40": ["L40", "l40", "NVIDIA L40", "L40 48GB"],
    "L40S": ["L40S", "l40s", "NVIDIA L40S", "L40S-48GB"],
    "A10": ["A10", "a10", "NVIDIA A10", "A10 24GB"],
    "A10G": ["A10G", "a10g", "NVIDIA A10G", "A10G 24GB"],
    "H200": ["H200", "NVIDIA H200", "H200 141GB", "h200-141gb", "H200 SXM"],
    "H100-80GB": ["H100-80GB", "H100 80GB", "h100-80g", "H100 SXM", "H100 SXM5",
                  "NVIDIA H100 80GB HBM3"],
    "H100-PCIe": ["H100 PCIe", "NVIDIA H100 PCIe", "H100-PCIe-80GB"],
    "H100-NVL": ["H100 NVL", "NVIDIA H100 NVL", "H100 NVL 94GB"],
    "A100-40GB": ["A100 40GB", "NVIDIA A100-SXM4-40GB", "a100_40g"],
    "A100-80GB": ["A100-80GB", "NVIDIA A100-SXM4-80GB", "A100 80G"],
    "L20": ["L20", "NVIDIA L20", "L20 48GB"],
    "RTX-6000-Ada": ["RTX 6000 Ada", "NVIDIA RTX 6000 Ada Generation", "rtx6000ada"],
    "RTX-A6000": ["RTX A6000", "NVIDIA RTX A6000", "A6000"],
    "RTX-PRO-6000": ["RTX PRO 6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                     "RTX PRO 6000 Blackwell", "RTX-PRO-6000-96GB"],
    "RTX-4090": ["RTX 4090", "NVIDIA GeForce RTX 4090", "4090", "GeForce RTX 4090 24GB"],
    "MI355X": ["MI355X", "AMD Instinct MI355X", "mi355x 288GB"],
    "MI350X": ["MI350X", "AMD MI350X"],
    "GB300": ["GB300", "NVIDIA GB300", "GB300 279GB"],
    "B300": ["B300", "NVIDIA B300", "B300 270GB"],
}


@pytest.mark.parametrize("name, spelling", [(n, s) for n, ss in SPELLINGS.items() for s in ss])
def test_every_spelling_resolves_to_the_same_gpu(name, spelling):
    assert get_gpu(spelling) is CATALOG[name]


@pytest.mark.parametrize("near, closest", [
    ("H2", "H20, H200"),
    ("L4O", "L4, L40, L40S"),
    ("RTX 6000", "RTX-6000-Ada, RTX-A6000, RTX-PRO-6000"),
    ("RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
    ("MI300", "MI300X"),
    ("A10X", "A10, A10G"),
    ("H20 141GB", "H20"),  # a memory the catalog's H20 does not have
    ("H200 96GB", "H200"),
    ("A100 PCIe 80GB", "A100-80GB"),  # the PCIe A100 has 1,935 GB/s, not the SXM's 2,039
])
def test_a_near_miss_is_refused_with_the_closest_names(near, closest):
    with pytest.raises(ValueError) as e:
        get_gpu(near)
    msg = str(e.value)
    assert "\n" not in msg and repr(near) in msg
    named = re.search(r"closest ([^(]*) \(", msg).group(1).split(", ")
    assert set(closest.split(", ")) <= set(named), msg


@pytest.mark.parametrize("name, parts", [("A100", "A100-40GB, A100-80GB"),
                                         ("h100", "H100-80GB, H100-NVL, H100-PCIe")])
def test_a_name_of_several_parts_is_refused_with_the_choices(name, parts):
    """A bare "A100" was read as the 80 GB part; a 40 GB owner got twice their memory."""
    n = len(parts.split(", "))
    with pytest.raises(ValueError, match=f"^GPU '{name}' names {n} parts: choose one of {parts}$"):
        get_gpu(name)


def _spell(name: str, data) -> str:
    """``name`` as a person might type it: any case, any separators between its runs of
    letters and digits, perhaps a vendor prefix, perhaps its size where it has one."""
    runs = re.findall(r"[A-Za-z]+|\d+", name)
    seps = st.sampled_from(["", " ", "-", "_"])
    text = runs[0]
    for run in runs[1:]:
        text += data.draw(seps) + run
    gpu = CATALOG[name]
    if not re.search(r"\d+GB$", name) and data.draw(st.booleans()):
        text += data.draw(seps) + f"{round(gpu.hbm_bytes / 1e9)}" + data.draw(
            st.sampled_from(["GB", "G", "gb"]))
    if data.draw(st.booleans()):
        vendor = "AMD " if gpu.cuda_capability is None else "NVIDIA "
        text = vendor + text
    return "".join(ch.upper() if data.draw(st.booleans()) else ch.lower() for ch in text)


@given(st.sampled_from(sorted(CATALOG)), st.data())
def test_property_any_spelling_of_a_catalog_name_is_that_gpu(name, data):
    assert resolve_gpu(_spell(name, data)) == name


@given(st.sampled_from(sorted(CATALOG)), st.sampled_from(sorted(CATALOG)), st.data())
def test_property_no_catalog_name_resolves_to_another_gpu(name, other, data):
    """No spelling of one part, cut short or run on by a character, reaches another part."""
    spelled = _spell(name, data)
    for text in (spelled, spelled[:-1], spelled + data.draw(st.sampled_from("0123456789SXG"))):
        try:
            got = resolve_gpu(text)
        except ValueError as e:
            assert "\n" not in str(e) and repr(text) in str(e)
            continue
        if got != name:  # only when ``text`` is itself a spelling of ``got`` ("L40" + "S")
            assert re.sub(r"[^a-z0-9]", "", text.lower()).endswith(
                re.sub(r"[^a-z0-9]", "", got.lower().split("-")[-1])), (text, got)
    if other != name:
        assert resolve_gpu(other) == other


def test_closest_names_are_catalog_names():
    for near in ("", "x", "V100", "TPU v5e", "H800"):
        assert set(closest_gpus(near)) <= set(CATALOG)


def test_override_memory_and_bandwidth():
    g = get_gpu("H200", hbm_bytes=150 * 1024**3, bandwidth=4_000 * 1000**3)
    assert g.hbm_bytes == 150 * 1024**3 and g.bandwidth == 4 * 1000**4
    assert g.reported_bytes is None  # the reported total described the catalog part
    assert "overridden" in g.source
    assert CATALOG["H200"].hbm_bytes == 141 * 1000**3  # the catalog itself is unchanged


def test_unknown_gpu_names_the_value_and_the_closest():
    with pytest.raises(ValueError, match="^GPU must be one of the catalog's .* names, got 'V100': "
                                         "closest A10"):
        get_gpu("V100")


def test_h100_cuda_total_is_a_range_and_the_plan_takes_vllms_figure():
    """Issue 34: drivers differ; vLLM's logs print 79.22 GiB, most other messages 79.11 GiB."""
    h100 = CATALOG["H100-80GB"]
    low, high = h100.cuda_total_range
    assert (low, high) == (7911 * GiB // 100, 7922 * GiB // 100)
    assert h100.total_memory_bytes == h100.cuda_total_bytes == high
    assert "79.11 GiB" in h100.cuda_total_source and "79.22GiB" in h100.cuda_total_source
    for gpu in CATALOG.values():
        if gpu.cuda_total_range is not None:
            assert gpu.cuda_total_range[0] <= gpu.cuda_total_bytes <= gpu.cuda_total_range[1]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "80"])
def test_override_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="GPU memory"):
        get_gpu("H200", hbm_bytes=bad)


def test_rtx_6000_ada_cuda_total_is_the_printed_figure():
    """PyTorch's 'total capacity of 44.43 GiB' beside nvidia-smi's 46068MiB (the L40S's
    nvidia-smi total too, whose CUDA total the catalog has as 44.42 GiB)."""
    ada = CATALOG["RTX-6000-Ada"]
    assert ada.cuda_total_bytes == 4443 * GiB // 100 == ada.total_memory_bytes
    assert ada.reported_bytes == CATALOG["L40S"].reported_bytes == 46068 * 1024**2


def test_issue_36_gpus_say_why_they_have_no_cuda_total():
    """The GPUs issue 36 added: each has its CUDA total with a source, or says in its entry
    that no public log gave one and the plan takes the datasheet's."""
    from kvlib.serving.gpus import CATALOG

    for name in ("H20", "L40", "A10", "A10G", "L20", "RTX-PRO-6000", "MI355X", "GB300",
                 "B300"):
        gpu = CATALOG[name]
        if gpu.cuda_total_bytes is None:
            assert gpu.cuda_total_source.startswith("no CUDA total: no public"), name
            assert gpu.cuda_total_source.endswith("so the plan takes the datasheet's"), name
            assert gpu.total_memory_bytes == gpu.hbm_bytes
        else:
            assert "github.com/" in gpu.cuda_total_source, name
    assert "~95.1 GiB" in CATALOG["H20"].cuda_total_source  # rounded, so not taken
    assert CATALOG["RTX-6000-Ada"].cuda_total_bytes == 4443 * 2**30 // 100
