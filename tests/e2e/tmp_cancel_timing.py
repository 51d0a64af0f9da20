import time, sys
import test_progress as tp
tp.setUpModule()
try:
    for n in range(6):
        before = tp.count(tp.SRV["rw"])
        sid = tp.initialize(tp.SRV["rw"])
        tp.notify(tp.SRV["rw"], sid, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        conn, resp = tp.open_call(tp.SRV["rw"], "episode.ingest", {"lines": tp.episodes(5000, f"t{n}")}, id=42, progress=7, session=sid)
        stream = tp.sse_messages(resp)
        t0 = time.monotonic()
        first = next(stream)
        t1 = time.monotonic()
        code = tp.notify(tp.SRV["rw"], sid, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}})
        t2 = time.monotonic()
        rest = list(stream)
        t3 = time.monotonic()
        conn.close()
        print(f"first progress {first['params'].get('progress')} after {t1-t0:.3f}s; cancel answered {code} in {t2-t1:.3f}s; stream ended {t3-t2:.3f}s later; stayed={tp.count(tp.SRV['rw'])-before} results={[m for m in rest if 'result' in m][:1] and 'yes'}", flush=True)
    log = tp.SRV["server"].read_log()
    print("\n".join(l for l in log.splitlines() if "cancelled" in l or "notifications" in l)[-3000:])
finally:
    tp.tearDownModule()
