# Measurement-only patch: one LOG line per eviction run with its wall and
# CPU time (CLOCK_THREAD_CPUTIME_ID), entries examined (new build) and evicted.
import sys, re
p = sys.argv[1] + '/src/kind_evict.c'
s = open(p).read()
s = s.replace('#include <math.h>\n', '#include <math.h>\n#include <time.h>\n', 1)
helper = '''
static double
evlog_now(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
'''
i = s.index('void\npgss_ng_kind_evict(PgssNgKind *kind)')
s = s[:i] + helper + '\n' + s[i:]
# start: right after the lock is taken
a = '\tif (!LWLockConditionalAcquire(kind->dealloc_lock, LW_EXCLUSIVE))\n\t\treturn;\n'
assert s.count(a) == 1
s = s.replace(a, a + '\tdouble evw0 = evlog_now(CLOCK_MONOTONIC), evc0 = evlog_now(CLOCK_THREAD_CPUTIME_ID);\n')
# end: before the final release
k = s.rindex('\tLWLockRelease(kind->dealloc_lock);\n}')
exam = 'ex.nvisited' if 'EvictExam' in s else 'scan.ncand'
s = s[:k] + '\telog(LOG, "EVLOG examined %%d evicted %%d wall_us %%.1f cpu_us %%.1f live %%u room %%d", %s, nevicted, evlog_now(CLOCK_MONOTONIC) - evw0, evlog_now(CLOCK_THREAD_CPUTIME_ID) - evc0, pg_atomic_read_u32(&ks->entries_live), (int) for_room);\n' % exam + s[k:]
open(p, 'w').write(s)
