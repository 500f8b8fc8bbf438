import re, sys, statistics as st, collections
rows = []
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 5 or not p[4].startswith('tps='): continue
    d = dict(x.split('=', 1) for x in p[4:7])
    m = re.search(r'waits=\[(.*?)\]', line)
    waits = collections.Counter()
    for kv in m.group(1).split():
        if '=' in kv:
            k, n = kv.rsplit('=', 1); waits[k] += int(n)
    hot = re.search(r'hot=(\S+) hot_tx=(\S+)', line)
    rows.append(dict(r=p[0], v=p[1], w=p[2], c=int(p[3]), tps=float(d['tps']), cpu=float(d['cpu_us']), waits=waits, hot=hot.groups()))
none = {(x['r'], x['w'], x['c']): x for x in rows if x['v'] == 'none'}
g = collections.defaultdict(list)
for x in rows: g[(x['w'], x['c'], x['v'])].append(x)
vs = ['pgss', 'ng:main', 'ng:queue', 'ng:noqueue']
def cell(w, c, v):
    gg = g[(w, c, v)]
    rat = st.median(x['tps'] / none[(x['r'], w, c)]['tps'] for x in gg)
    ext = st.median(x['cpu'] - none[(x['r'], w, c)]['cpu'] for x in gg)
    wt = collections.Counter()
    for x in gg: wt.update(x['waits'])
    busy = sum(n for k, n in wt.items() if k != 'idle')
    tot = sum(wt.values())
    lw = [(k, n) for k, n in wt.most_common() if k.startswith('LWLock:')]
    top = '%s %d%%' % (lw[0][0][7:], round(100.0 * lw[0][1] / busy)) if lw and busy else '-'
    return rat, ext, top, busy, tot
print('| workload | clients | TPS / untracked: pg_stat_statements, old, queue, no queue | extra backend CPU per transaction, us: pg_stat_statements, old, queue, no queue | top LWLock wait, % of busy samples: pg_stat_statements, old, queue, no queue | busy / all samples (no queue) |')
print('| --- | ---: | --- | --- | --- | --- |')
for w in ['cold_only', 'hotcold_churn']:
    for c in [1, 4, 16, 64]:
        cs = [cell(w, c, v) for v in vs]
        print('| %s | %d | %s | %s | %s | %d / %d |' % (w, c,
            ', '.join('%.2f' % x[0] for x in cs), ', '.join('%+.1f' % x[1] for x in cs),
            ', '.join(x[2] for x in cs), cs[3][3], cs[3][4]))
# hot retention
print()
for v in vs[1:]:
    out = []
    for c in [1, 4, 16, 64]:
        gg = g[('hotcold_churn', c, v)]
        kept = min(int(x['hot'][0].split('/')[0]) for x in gg)
        calls = min(int(x['hot'][0].split('/')[1]) / (4000 + int(x['hot'][1])) for x in gg)
        out.append('%d: %d/4000 %.2f%%' % (c, kept, 100 * calls))
    print(v, '; '.join(out))
loads = [float(re.search(r'load=([\d.]+)', l).group(1)) for l in open(sys.argv[1]) if 'load=' in l]
print('load', min(loads), st.median(loads), max(loads))
