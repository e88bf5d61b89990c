"""The cross-check against transformers (docs/crosscheck.md): offline, or skipped whole.

* torch or transformers not importable (``make test`` installs neither): every test
  module in this folder is reported as skipped, with the reason, without being imported.
  ``make crosscheck`` installs the ``crosscheck`` extra and runs the folder.
* Nothing here reaches the network: HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE are set
  before transformers is imported, and, for every test module, ``socket.connect``
  raises for any address that is not loopback (the models are built from configs
  with random weights; nothing is downloaded).
"""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

try:
    import torch  # noqa: F401
    import transformers  # noqa: F401

    MISSING = None
except ImportError as e:
    MISSING = (f"cross-check against transformers skipped: {e.name or e} is not installed "
               "(make crosscheck installs the crosscheck extra)")


class _Skipped(pytest.Item):
    def runtest(self):
        pytest.skip(MISSING)

    def reportinfo(self):
        return self.path, None, self.name


class _SkippedModule(pytest.File):
    """A test module that is not imported (it imports torch): one skipped test stands for it.

    A skipped test, not a skipped collector, so ``pytest tests/crosscheck`` alone ends with
    "2 skipped" and exit status 0 rather than 5 (no tests collected).
    """

    def collect(self):
        yield _Skipped.from_parent(self, name="needs_torch_and_transformers")


def pytest_pycollect_makemodule(module_path, parent):
    # A hook rather than a module-level skip here: that one errors when this folder is
    # named on the command line (pytest tests/crosscheck), since this conftest then loads
    # before collection starts.
    if MISSING:
        return _SkippedModule.from_parent(parent, path=module_path)
    return None


def _loopback(address) -> bool:
    if isinstance(address, str | bytes):  # an AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) else address
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: resolving it would already be a network attempt
        return False


class NetworkBlocked(RuntimeError):
    """Raised for any connection the cross-check tried to open to a non-loopback address."""


def _guarded(connect):
    def guarded_connect(self, address):
        if self.family == socket.AF_UNIX or _loopback(address):
            return connect(self, address)
        raise NetworkBlocked(f"the cross-check tried to reach {address!r}; it must run offline")
    return guarded_connect


@pytest.fixture(scope="module", autouse=True)
def no_network():
    """Module scope, autouse: in force before the module-scoped model fixtures are built."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _guarded(socket.socket.connect))
        mp.setattr(socket.socket, "connect_ex", _guarded(socket.socket.connect_ex))
        yield
