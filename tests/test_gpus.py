"""The GPU catalog against the vendors' datasheets, and its overrides."""

import pytest

from kvlib.serving.gpus import CATALOG, get_gpu

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
}


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
    assert set(DATASHEETS) == set(CATALOG)


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


@pytest.mark.parametrize("name, parts", [("A100", "A100-40GB, A100-80GB"),
                                         ("h100", "H100-80GB, H100-NVL"),
                                         ("RTX", "RTX-4090, RTX-5090")])
def test_a_name_of_two_parts_is_refused_with_the_choices(name, parts):
    """A bare "A100" was read as the 80 GB part; a 40 GB owner got twice their memory."""
    with pytest.raises(ValueError, match=f"^GPU '{name}' names 2 parts: choose one of {parts}$"):
        get_gpu(name)


def test_override_memory_and_bandwidth():
    g = get_gpu("H200", hbm_bytes=150 * 1024**3, bandwidth=4_000 * 1000**3)
    assert g.hbm_bytes == 150 * 1024**3 and g.bandwidth == 4 * 1000**4
    assert g.reported_bytes is None  # the reported total described the catalog part
    assert "overridden" in g.source
    assert CATALOG["H200"].hbm_bytes == 141 * 1000**3  # the catalog itself is unchanged


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(ValueError, match="GPU must be one of A100-40GB, A100-80GB, H100-80GB"):
        get_gpu("V100")


@pytest.mark.parametrize("bad", [0, -1, 1.5, "80"])
def test_override_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="GPU memory"):
        get_gpu("H200", hbm_bytes=bad)
