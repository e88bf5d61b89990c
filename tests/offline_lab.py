"""Run `make lab WHEELS=...` in a copy of the repository and check what it serves (issue 36).

Run by tests/test_offline_lab.py as ``python offline_lab.py SETTINGS.json``, inside a network
namespace of its own where the machine allows one (``unshare -n``: only a loopback device,
which this script brings up), so nothing it starts can reach another host. It starts
``make lab`` in its own process group, waits for the server, asks it for notebook 01 (the page
the printed URL opens, and the file through the contents API), starts a kernel in notebook
01's folder and has it import kvlib, stops the server, and prints what it found as one JSON
line. Standard library only, and tornado (JupyterLab's server library) for the kernel's
websocket. SETTINGS: ``copy`` (the repository copy), ``make`` (the make arguments), ``env``,
``port``, ``token``, ``notebook``, ``log``, ``timeout``, ``loopback`` (bring ``lo`` up).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request


def loopback_up() -> None:
    """Bring ``lo`` up in a new network namespace (ip link set lo up, without iproute2)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, siocgifflags, req))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def reaches_outside() -> bool:
    """Whether a connection to a public address gets anywhere (DNS is not needed for this)."""
    try:
        socket.create_connection(("1.1.1.1", 443), timeout=3).close()
    except OSError:
        return False
    return True


def run_in_kernel(url: str, code: str, timeout: float = 90) -> str:
    """What ``code`` prints in the kernel behind ``url`` (the channels websocket Lab uses)."""
    import asyncio
    import uuid

    from tornado.websocket import websocket_connect  # JupyterLab's own server library

    async def talk() -> str:
        ws = await websocket_connect(url)
        msg_id = uuid.uuid4().hex
        await ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                       "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        printed = []
        while True:
            msg = json.loads(await ws.read_message())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                printed.append("\n".join(msg["content"]["traceback"]))
            elif msg["msg_type"] == "execute_reply":
                ws.close()
                return "".join(printed)

    return asyncio.run(asyncio.wait_for(talk(), timeout))


def main(settings_path: str) -> int:
    cfg = json.loads(open(settings_path).read())
    if cfg["loopback"]:
        loopback_up()
    base = f"http://127.0.0.1:{cfg['port']}"
    auth = {"Authorization": f"token {cfg['token']}"}
    found: dict = {"network": reaches_outside()}

    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy to 127.0.0.1

    def get(path: str, method: str = "GET", headers: dict | None = None, body: dict | None = None):
        req = urllib.request.Request(base + path, method=method, headers=headers or auth,
                                     data=None if body is None else json.dumps(body).encode())
        with direct.open(req, timeout=10) as r:
            return r.status, r.read().decode()

    t0 = time.monotonic()
    with open(cfg["log"], "wb") as log:
        proc = subprocess.Popen(["make", *cfg["make"]], cwd=cfg["copy"], env=cfg["env"],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while True:  # installing, then starting the server
            if proc.poll() is not None:
                found["exited"] = proc.returncode
                return print(json.dumps(found)) or 0
            if time.monotonic() - t0 > cfg["timeout"]:
                found["timeout"] = True
                return print(json.dumps(found)) or 0
            try:
                get("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        found["serving_after_s"] = round(time.monotonic() - t0, 1)
        nb = cfg["notebook"]
        found["page"] = get(f"/lab/tree/{nb}?token={cfg['token']}", headers={})
        status, body = get(f"/api/contents/{nb}?content=1")
        found["contents"] = [status, json.loads(body)]
        status, body = get("/api/kernels", method="POST", body={"path": "notebooks"})
        kernel = json.loads(body)
        found["kernel_output"] = run_in_kernel(
            f"ws://127.0.0.1:{cfg['port']}/api/kernels/{kernel['id']}/channels?token={cfg['token']}",
            "import os, sys, kvlib; print(os.getcwd()); print(sys.prefix); print(kvlib.__file__)")
        found["kernel_stopped"] = get(f"/api/kernels/{kernel['id']}", method="DELETE")[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # make and the server it started
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
    found["total_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
