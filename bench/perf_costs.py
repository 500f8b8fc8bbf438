#!/usr/bin/env python3
"""perf_costs.py: what tracking costs, from a perf profile of backends.

Usage (see docs/performance.md, "Profiles: where the CPU goes"):

    perf record -e cpu-clock -F 999 --call-graph dwarf,16384 \
        -p <backend pids> -o prof.data -- sleep 15
    perf script -i prof.data -F comm,pid,ip,sym,dso > prof.txt
    python3 bench/perf_costs.py prof.txt [--other]

Run perf script while the pgss_ng.so that was profiled is installed:
perf resolves the library's symbols from the file at its path.

A sample counts as tracking cost when, walking from the leaf towards the
root, a pgss_ng.so frame comes before any frame where the hooks hand over
to the server's own work (standard_Executor*, standard_planner,
standard_ProcessUtility, PortalRun*), or when its leaf-side frames are the
executor's totaltime instrumentation (Instr*, *UsageAccumDiff; only there
because pgss_ng asks for it) or query jumbling (JumbleQuery; only there
because pgss_ng enables query ids).  A tracking sample goes to the first
whole-stack context that matches (eviction, entry creation, normalization),
else to the first frame from the leaf that matches a leaf rule.  Prints
each item's share of all the backends' samples (kernel time included).
"""
import re, sys, collections

BOUNDARY = re.compile(r'^(standard_Executor\w+|standard_planner|standard_ProcessUtility|PortalRun\w*)$')
# (category, regex on symbol), checked per frame from the leaf; the first
# frame that matches any rule decides.
RULES = [
    ('clock reads (clock_gettime / GetCurrentTimestamp)', r'clock_gettime|GetCurrentTimestamp|__vdso'),
    ('lock operations (LWLock acquire/release)', r'^LWLock|^LWLockConditional|^LWLockRelease|^LWLockAcquire|^LWLockWait|futex|^PGSemaphore'),
    ('hashing (XXH3 of the key)', r'XXH|kind_hash|^pgss_ng_kind_hash'),
    ('pending hash (dynahash)', r'^hash_search|^hash_seq|^tag_hash|^hash_bytes|^hash_uint32|^string_hash|^hash_initial_lookup|^expand_table|^get_hash_entry|^hash_search_with_hash_value|^uint32_hash'),
    ('shared hash lookup (dshash)', r'^dshash|^dsa_get_address|^delete_item|^find_in_bucket|^ensure_valid_bucket'),
    ('memset / memcpy', r'memset|memcpy|memmove|__memset|__memcpy'),
    ('histogram (bucket + merge)', r'hist'),
    ('normalization (normalize, CleanQuerytext)', r'normalize|CleanQuerytext|fill_in_constant_lengths|comp_location|^core_yylex|^scanner_|^base_yylex'),
    ('text store (qtext arena)', r'qtext'),
    ('eviction', r'evict'),
    ('entry reference: pin/unpin (lookup_or_create, release_ref)', r'lookup_or_create|find_ref|release_ref|^dsa_free'),
    ('failure frames (frames.c)', r'pgss_ng_stmt_flush_failures|pgss_ng_stmt_end|pgss_ng_frame_failed|merge_errors|stmt_errors'),
    ('counting (count_one, merge)', r'count_one|count_time|count_jit|pgss_ng_stmt_merge|stmt_flush_pending|stmt_stamp_changed'),
    ('flush bookkeeping (flush_one, usage decay)', r'flush_one|pgss_ng_kind_flush|lock_entry|unlock_entry|kind_decayed_usage|pgss_ng_flush|flush_internal|flush_guarded|exp2|^exp$|^pow$'),
    ('pending entry set-up (get_pending, store)', r'get_pending|find_live_pending|pgss_ng_stmt_pending|store_internal|store_guarded'),
]
RULES = [(c, re.compile(r)) for c, r in RULES]
# whole-stack contexts, checked first
CONTEXT = [
    ('eviction (kind_evict.c: scan, sort, drop)', r'evict|candidate_cmp'),
    ('entry creation + text store (alloc_body, stmt_init, qtext, dshash insert)', r'alloc_body|stmt_init|qtext|pgss_ng_kind_create|insert_guarded|insert_one'),
    ('normalization (normalized text of a new entry)', r'normalize|CleanQuerytext'),
]
CONTEXT = [(c, re.compile(r)) for c, r in CONTEXT]
INSTR = re.compile(r'^(InstrStartNode|InstrStopNode|InstrEndLoop|InstrAlloc|InstrInit|BufferUsageAccumDiff|WalUsageAccumDiff|BufferUsageAdd|WalUsageAdd)$')
JUMBLE = re.compile(r'Jumble|^AppendJumble|^_jumble|^RecordConstLocation')

def samples(f):
    cur = None
    for line in f:
        if not line.strip():
            if cur is not None:
                yield cur
            cur = None
            continue
        if not line.startswith(('\t', ' ')):
            cur = []
            continue
        m = re.match(r'\s*[0-9a-f]+ (.*) \((.*)\)$', line.rstrip())
        if m and cur is not None:
            cur.append((m.group(1).replace(' (inlined)', ''), m.group(2)))
    if cur:
        yield cur

total = 0
cat = collections.Counter()
selfsym = collections.Counter()
for st in samples(open(sys.argv[1])):
    total += 1
    c = None
    chain = []
    full = [sym for sym, dso in st]
    NGSYMS = set(sym for sym, dso in st if 'pgss_ng.so' in dso)
    for i, (sym, dso) in enumerate(st):
        if 'pgss_ng.so' in dso:
            chain = full
            c = 'ng'
            break
        if BOUNDARY.match(sym):
            break
        chain.append(sym)
    if c is None:
        if any(INSTR.match(s) for s in chain):
            cat['totaltime instrumentation (InstrStartNode/StopNode/EndLoop)'] += 1
        elif any(JUMBLE.search(s) for s in chain):
            cat['query jumbling (JumbleQuery)'] += 1
        continue
    name = None
    for cn, rx in CONTEXT:
        if any(rx.search(s) for s in chain):
            name = cn
            break
    for s in chain:
        if name:
            break
        for cn, rx in RULES:
            if rx.search(s):
                name = cn
                break
        if name:
            break
    if name is None:
        name = 'other pgss_ng code (hooks, guard, ...)'
        selfsym[next((x for x in chain if x in NGSYMS), chain[0])] += 1
    cat[name] += 1

ng = sum(cat.values())
print(f'samples {total}; tracking cost {ng} = {100.0*ng/total:.1f}% of backend CPU')
for k, v in cat.most_common():
    print(f'| {k} | {100.0*v/total:.1f}% | {v} |')
if len(sys.argv) > 2 and sys.argv[2] == '--other':
    print('other:', selfsym.most_common(15))
