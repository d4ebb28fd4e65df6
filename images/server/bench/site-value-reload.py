#!/usr/bin/env python3
"""site-value-reload.py BIN ROOT [FLAG...]: how long a site value change takes to serve.

Starts BIN (a hyperstatic-server build) on ROOT with `--site` in a kubelet-style directory ($CONF_DIR, default
/tmp/site-value-reload-conf: `..tsN/site.json`, `..data` renamed over for each change), publishes seven values
(a header and a cache-control rule each), and prints per change the load time the server logs (`content loaded`,
`ms`) and the time from the swap until /metrics exports the new revision (polled every 5 ms; includes the 150 ms
debounce). Figures: docs/bench/site-value-2026-12-02.md.
"""
import json, os, re, subprocess, sys, time, urllib.request, hashlib, statistics
BIN=sys.argv[1]; ROOT=sys.argv[2]; extra=sys.argv[3:]
conf=os.environ.get("CONF_DIR", "/tmp/site-value-reload-conf"); os.makedirs(conf, exist_ok=True)
def publish(i, rev):
    d=os.path.join(conf, f"..ts{i}"); os.makedirs(d, exist_ok=True)
    body=json.dumps({"version":1,"cacheControl":[{"glob":"*.css","value":f"max-age={rev}"}],"headers":[{"name":"X-Rev","value":str(rev)}]})
    open(os.path.join(d,"site.json"),"w").write(body)
    tmp=os.path.join(conf,"..data_tmp")
    if os.path.lexists(tmp): os.remove(tmp)
    os.symlink(f"..ts{i}", tmp); os.rename(tmp, os.path.join(conf,"..data"))
    if not os.path.lexists(os.path.join(conf,"site.json")): os.symlink("..data/site.json", os.path.join(conf,"site.json"))
    return "sha256:"+hashlib.sha256(body.encode()).hexdigest()[:16]
rev=publish(0,0)
p=subprocess.Popen([BIN,"--root",ROOT,"--site",os.path.join(conf,"site.json"),"--listen","127.0.0.1:0","--admin-listen","127.0.0.1:0","--workers","1"]+extra, stderr=subprocess.PIPE, text=True)
logs=[]
admin=None
while admin is None:
    l=p.stderr.readline(); logs.append(l)
    m=re.search(r'"admin":"[^"]*:(\d+)"', l)
    if m: admin=int(m.group(1))
import threading
def pump():
    for l in p.stderr: logs.append(l)
threading.Thread(target=pump, daemon=True).start()
def metrics(): return urllib.request.urlopen(f"http://127.0.0.1:{admin}/metrics").read().decode()
files=re.search(r"hyperstatic_content_files (\d+)", metrics()).group(1)
print("files", files, "start load ms", [json.loads(l).get("ms") for l in logs if '"content loaded"' in l])
walls=[]; loads=[]
for i in range(1,8):
    n=len([l for l in logs if '"content loaded"' in l])
    t0=time.monotonic(); want=publish(i,i)
    while f'hyperstatic_site_value_info{{revision="{want}"}} 1' not in metrics():
        time.sleep(0.005)
        if time.monotonic()-t0>60: sys.exit("timeout")
    walls.append((time.monotonic()-t0)*1000)
    while len([l for l in logs if '"content loaded"' in l])<=n: time.sleep(0.005)
    loads.append(json.loads([l for l in logs if '"content loaded"' in l][-1])["ms"])
p.terminate(); p.wait()
print("load ms per value change (log 'content loaded' ms):", loads, "median", statistics.median(loads))
print("swap -> new revision exported, ms (includes the 150 ms debounce):", [round(w) for w in walls], "median", round(statistics.median(walls)))
