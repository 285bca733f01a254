#!/usr/bin/env python3
"""Floods `hale demo --udp-hub` with 1-byte datagrams for SECONDS, then
prints the demo's peak RSS (VmHWM) and CPU time. usage: flood.py HALE SECONDS"""
import os, re, socket, subprocess, sys, tempfile, time
hale, seconds = sys.argv[1], float(sys.argv[2])
d = tempfile.mkdtemp()
p = subprocess.Popen([hale, "demo", "--public", "127.0.0.1:0", "--partner", "127.0.0.1:0",
    "--mcp", "127.0.0.1:0", "--admin-socket", f"{d}/a.sock", "--control", f"{d}/c.sock",
    "--udp-hub", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
hub = None
for line in p.stdout:
    if "udp://" in line:
        hub = line.split("udp://")[1].strip()
    if line.startswith("stop with"):
        break
host, port = hub.rsplit(":", 1); hub = (host, int(port))
def status(k):
    return int(re.search(rf"{k}:\s+(\d+)", open(f"/proc/{p.pid}/status").read()).group(1))
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
rss0, cpu0 = status("VmHWM"), cpu()
import multiprocessing
def blast(q):
    if os.environ.get("FLOOD_BIN"):
        out = subprocess.run([os.environ["FLOOD_BIN"], hub[0], str(hub[1]), str(int(seconds))], capture_output=True, text=True).stdout
        q.put(int(out)); return
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    n, end = 0, time.time() + seconds
    while time.time() < end:
        for _ in range(1000):
            s.sendto(b"x", hub); n += 1
    q.put(n)
q = multiprocessing.Queue()
procs = [multiprocessing.Process(target=blast, args=(q,)) for _ in range(int(os.environ.get("FLOODERS", "2")))]
[x.start() for x in procs]
sent = sum(q.get() for _ in procs)
[x.join() for x in procs]
cpu1 = cpu()
time.sleep(1)
print(f"sent={sent} VmHWM_before={rss0}kB VmHWM_after={status('VmHWM')}kB VmRSS={status('VmRSS')}kB cpu_s={cpu1-cpu0:.2f} of {seconds}s")
t = time.time(); p.terminate(); p.wait(timeout=30); print(f"sigterm_exit_s={time.time()-t:.2f}")
