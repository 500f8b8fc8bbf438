import sys, re, statistics as st
runs = []
for l in sys.stdin:
    m = re.search(r'EVLOG examined (\d+) evicted (\d+) wall_us ([\d.]+) cpu_us ([\d.]+) live (\d+) room (\d)', l)
    if m:
        runs.append(tuple(float(x) for x in m.groups()))
if not runs:
    print('-'); sys.exit()
ev = [r for r in runs if r[1] > 0]
print('runs:%d,evicted:%d,exam_med:%d,cpu_us_med:%.0f,wall_us_med:%.0f,cpu_us_per_evicted:%.2f,cpu_ms_total:%.0f' % (
    len(ev), sum(r[1] for r in ev), st.median(r[0] for r in ev) if ev else 0,
    st.median(r[3] for r in ev) if ev else 0, st.median(r[2] for r in ev) if ev else 0,
    sum(r[3] for r in ev) / max(1, sum(r[1] for r in ev)), sum(r[3] for r in runs) / 1000))
