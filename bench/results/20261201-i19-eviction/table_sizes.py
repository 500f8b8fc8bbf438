import re, sys, statistics as st, collections
rows = []
for line in open(sys.argv[1]):
    m = re.match(r'(\d+) max=(\d+) (\S+) (\S+) (\d+) tps=([\d.]+) cpu_us=([\d.]+) .*?ev=(\S+)', line)
    if not m: continue
    r, mx, v, w, c, tps, cpu, ev = m.groups()
    e = {}
    if ev != '-':
        e = dict((k, float(x)) for k, x in (kv.split(':') for kv in ev.split(',')))
    info = re.search(r'info=(\{.*?\}) load', line)
    rows.append(dict(r=r, mx=int(mx), v=v, w=w, tps=float(tps), cpu=float(cpu), ev=e, line=line))
none = {(x['r'], x['mx'], x['w']): x for x in rows if x['v'] == 'none'}
g = collections.defaultdict(list)
for x in rows: g[(x['w'], x['mx'], x['v'])].append(x)
vs = []
for x in rows:
    if x['v'] not in vs: vs.append(x['v'])
base = {}
print('| workload | max | variant | rounds | TPS median | vs untracked | vs own max 1000 | CPU us/tx | extra over untracked | eviction run: examined | CPU us per run | CPU us per evicted entry | eviction CPU ms per 10 s |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for w in sorted(set(x['w'] for x in rows)):
  for v in vs:
    for mx in sorted(set(x['mx'] for x in rows)):
        gg = g.get((w, mx, v))
        if not gg: continue
        tps = st.median(x['tps'] for x in gg)
        if mx == min(x['mx'] for x in rows): base[(w, v)] = tps
        rat = [x['tps'] / none[(x['r'], mx, w)]['tps'] for x in gg if (x['r'], mx, w) in none]
        ext = [x['cpu'] - none[(x['r'], mx, w)]['cpu'] for x in gg if (x['r'], mx, w) in none]
        ev = [x['ev'] for x in gg if x['ev']]
        def med(k): return st.median(e[k] for e in ev) if ev else None
        fmt = lambda val, f: (f % val) if val is not None else ''
        print('| %s | %d | %s | %d | %.0f | %s | %s | %.1f | %s | %s | %s | %s | %s |' % (w, mx, v, len(gg), tps,
            '%.2f' % st.median(rat) if v != 'none' and rat else '',
            '%.2f' % (tps / base[(w, v)]) if (w, v) in base else '',
            st.median(x['cpu'] for x in gg), '%+.1f' % st.median(ext) if v != 'none' and ext else '',
            fmt(med('exam_med'), '%.0f'), fmt(med('cpu_us_med'), '%.0f'), fmt(med('cpu_us_per_evicted'), '%.2f'), fmt(med('cpu_ms_total'), '%.0f')))
