"""Attacks on `hale demo --hub ADDR --hub-desk` (issue #26, items 4, 5
and 10c), each bounded in time; prints one JSON line: peak RSS (VmHWM, KiB)
and CPU seconds of the demo, and what the attack saw.

- flood: one connection with dave's token sends up to 1M `call` frames
  (108 bytes each) for 5 s without reading an answer;
- flood-anon: the same with no token, up to 300k frames;
- anon: 4096 upgrades with no token, held; then dave subscribes; then
  how many of the 4096 are still open 12 s later;
- teardown: dave subscribes and never reads or answers the close; SIGTERM,
  and the seconds until the demo exits.

usage: hub-attacks.py HALE flood|flood-anon|anon|teardown"""
import base64, json, os, select, signal, socket, subprocess, sys, tempfile, time

hale, attack = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="hubm-")
proc = subprocess.Popen([hale, "demo", "--public", "127.0.0.1:0", "--partner", "127.0.0.1:0",
    "--mcp", "127.0.0.1:0", "--admin-socket", f"{tmp}/a.sock", "--control", f"{tmp}/c.sock",
    "--hub", "127.0.0.1:0", "--hub-desk"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
hub = None
for line in proc.stdout:
    if line.startswith("stop with"):
        break
    w = line.split()
    if len(w) == 2 and w[0].startswith("hub@") and w[1].startswith("ws://"):
        hub = w[1][5:]
host, port = hub.rsplit(":", 1)
port = int(port)

def status(key):
    for l in open(f"/proc/{proc.pid}/status"):
        if l.startswith(key):
            return int(l.split()[1])
def cpu():
    f = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

def upgrade(token=None, read=True):
    s = socket.create_connection((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    s.sendall(f"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n{auth}\r\n".encode())
    if read:
        head = b""
        while b"\r\n\r\n" not in head:
            d = s.recv(4096)
            if not d:
                return None
            head += d
        assert head.startswith(b"HTTP/1.1 101"), head
    return s

def frame(text, opcode=1):
    p = text.encode() if isinstance(text, str) else text
    mask = b"\x01\x02\x03\x04"
    h = bytes([0x80 | opcode])
    h += bytes([0x80 | len(p)]) if len(p) < 126 else bytes([0x80 | 126]) + len(p).to_bytes(2, "big")
    return h + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(p))

out = {"attack": attack}
c0 = cpu()
t0 = time.monotonic()
if attack in ("flood", "flood-anon"):
    s = upgrade("t-dave" if attack == "flood" else None)
    one = frame('{"type":"call","id":1000000,"call":"Orders::place","payload":{"symbol":"ACME","qty":10,"limit":12500}}')
    batch = one * 1000
    s.setblocking(False)
    sent = frames = 0
    n = 1_000_000 if attack == "flood" else 300_000
    end = time.monotonic() + 5
    buf = memoryview(batch)
    at = 0
    while frames < n and time.monotonic() < end:
        try:
            k = s.send(buf[at:])
            at += k; sent += k
            if at == len(batch):
                at = 0; frames += 1000
        except BlockingIOError:
            select.select([], [s], [], 0.05)
    out.update(sent_bytes=sent, sent_frames=sent // len(one), send_s=round(time.monotonic() - t0, 2))
    time.sleep(1)
    out["hwm_kb_during"] = status("VmHWM")
    s.close()
    time.sleep(1)
elif attack == "anon":
    held = []
    for i in range(4096):
        try:
            s = upgrade(None)
        except (ConnectionError, AssertionError, OSError) as e:
            s = None
        if s is not None:
            held.append(s)
    out["anonymous_upgraded"] = len(held)
    # An authenticated subscriber tries to get in.
    try:
        s = upgrade("t-dave")
        s.settimeout(5)
        s.sendall(frame('{"type":"subscribe","topic":"Fills"}'))
        d = s.recv(4096)
        out["subscriber"] = d[2:].decode(errors="replace") if d else "closed"
    except Exception as e:
        out["subscriber"] = f"refused: {e!r}"
    # How many anonymous are still open 12 s later.
    time.sleep(12)
    alive = 0
    for s in held:
        po = select.poll(); po.register(s, select.POLLIN)
        if not po.poll(0):
            alive += 1
        else:
            try:
                d = s.recv(65536, socket.MSG_PEEK)
                alive += 1 if d and not d.startswith(b"\x88") else 0
            except OSError:
                pass
    out["anonymous_open_after_12s"] = alive
elif attack == "teardown":
    s = upgrade("t-dave")
    s.sendall(frame('{"type":"subscribe","topic":"Fills"}'))
    s.recv(4096)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(30)
    out.update(exit_after_s=round(time.monotonic() - t0, 2), rc=rc)
out["cpu_s"] = round(cpu() - c0, 2) if proc.poll() is None else None
if proc.poll() is None:
    out["hwm_kb"] = status("VmHWM")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
print(json.dumps(out))
