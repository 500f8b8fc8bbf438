/*-------------------------------------------------------------------------
 *
 * stmt_evicted.c
 *	  The evicted remainder and the eviction log (stmt_evicted.h): per
 *	  (userid, dbid, toplevel) the sums of the counters that add up over the
 *	  entries evicted since the row was cleared (an overflow row past the
 *	  table), and a ring of the last pgss_ng.evicted_log evicted entries, both
 *	  written by the fold at eviction.  docs/design.md, "Evicted remainder".
 *	  Locking: LWLock pgss_ng_evicted, exclusive (innermost) to fold.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "stmt_kind.h"
#include "stmt_evicted.h"
#include "stmt_kind_int.h"

/* Rows of the hash table; rows beyond it go to the overflow rows. */
#define PGSS_NG_EVICTED_ROWS	1000

/*
 * Rows allocated at start; the others as rows are made, in the space
 * reserved for all of them (a server has a few (userid, dbid) pairs, and
 * 464 kB of rows nobody uses is memory taken for nothing).
 */
#define PGSS_NG_EVICTED_ROWS_FIRST	16

#define EVICTED_LOCK_NAME		"pgss_ng_evicted"

/*
 * Shared state beside the hash table: the overflow rows, by toplevel, with
 * which users and databases they may hold (bit oid % 64 of a mask; all
 * set for a row restored from the stats file), and the eviction log: a
 * ring of evicted_log entries (log_size of them as made at server start),
 * the next to write at log_written % log_size, the log_count before it
 * valid.
 */
typedef struct EvictedControl
{
	PgssNgEvictedRow overflow[2];
	uint64		overflow_users[2];
	uint64		overflow_dbs[2];
	int			log_size;
	int			log_count;		/* valid entries, up to log_size */
	uint64		log_written;	/* entries written since the last full
								 * reset */
	PgssNgEvictionLogEntry log[FLEXIBLE_ARRAY_MEMBER];
} EvictedControl;

/* an overflow row's mask bit of a user or database */
#define OID_BIT(oid)	(UINT64CONST(1) << ((oid) % 64))

static EvictedControl *evicted_ctl = NULL;
static HTAB *evicted_hash = NULL;
static LWLock *evicted_lock = NULL;

/* GUC pgss_ng.evicted_log: entries in the eviction log (0: none) */
static int	evicted_log = 100;

/*
 * pgss_ng_evicted_init
 *		Define pgss_ng.evicted_log (restart to change).  Called from
 *		_PG_init while preloading.
 */
void
pgss_ng_evicted_init(void)
{
	DefineCustomIntVariable("pgss_ng.evicted_log",
							"Sets the number of evicted statements "
							"pgss_ng_evictions remembers.",
							"0 turns the eviction log off.",
							&evicted_log,
							100,
							0,
							100000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
}

/*
 * pgss_ng_eviction_log_on
 *		Whether evicted entries are logged (pgss_ng.evicted_log > 0 at
 *		server start).  Read without a lock: it never changes.
 */
bool
pgss_ng_eviction_log_on(void)
{
	return evicted_ctl != NULL && evicted_ctl->log_size > 0;
}

/* bytes of EvictedControl with its ring */
static Size
evicted_control_size(void)
{
	return add_size(offsetof(EvictedControl, log),
					mul_size(evicted_log, sizeof(PgssNgEvictionLogEntry)));
}

/*
 * pgss_ng_evicted_shmem_request / _size / _startup
 *		The pgss_ng_evicted named LWLock (shmem_request_hook), the bytes of
 *		main shared memory the rows need, and their creation (with
 *		AddinShmemInitLock held).
 */
void
pgss_ng_evicted_shmem_request(void)
{
	RequestNamedLWLockTranche(EVICTED_LOCK_NAME, 1);
}

Size
pgss_ng_evicted_shmem_size(void)
{
	return add_size(MAXALIGN(evicted_control_size()),
					hash_estimate_size(PGSS_NG_EVICTED_ROWS,
									   sizeof(PgssNgEvictedRow)));
}

void
pgss_ng_evicted_shmem_startup(void)
{
	HASHCTL		info;
	bool		found;

	evicted_ctl = ShmemInitStruct("pgss_ng evicted",
								  evicted_control_size(), &found);
	if (!found)
	{
		memset(evicted_ctl, 0, offsetof(EvictedControl, log));
		evicted_ctl->log_size = evicted_log;
	}
	evicted_lock = &GetNamedLWLockTranche(EVICTED_LOCK_NAME)->lock;
	info.keysize = sizeof(PgssNgStmtKey);
	info.entrysize = sizeof(PgssNgEvictedRow);
	evicted_hash = ShmemInitHash("pgss_ng evicted rows",
								 PGSS_NG_EVICTED_ROWS_FIRST,
								 PGSS_NG_EVICTED_ROWS,
								 &info, HASH_ELEM | HASH_BLOBS);
}

/*
 * row_for
 *		The row of (userid, dbid, toplevel), made (empty, evicted_since
 *		now) if it is not there; the overflow row of toplevel when the
 *		table is full.  pgss_ng_evicted LWLock held exclusively.  No
 *		ERROR: the table never grows past PGSS_NG_EVICTED_ROWS, and
 *		HASH_ENTER_NULL returns NULL where shared memory is short.
 */
static PgssNgEvictedRow *
row_for(Oid userid, Oid dbid, bool toplevel, TimestampTz now)
{
	PgssNgStmtKey key;
	PgssNgEvictedRow *row;
	bool		found;

	memset(&key, 0, sizeof(key));
	key.userid = userid;
	key.dbid = dbid;
	key.toplevel = toplevel;
	row = hash_search(evicted_hash, &key, HASH_FIND, NULL);
	if (row == NULL &&
		hash_get_num_entries(evicted_hash) < PGSS_NG_EVICTED_ROWS)
	{
		row = hash_search(evicted_hash, &key, HASH_ENTER_NULL, &found);
		if (row != NULL && !found)
		{
			memset(&row->counters, 0, sizeof(row->counters));
			memset(row->wait_samples, 0, sizeof(row->wait_samples));
			row->entries = 0;
			row->evicted_since = now;
		}
	}
	if (row == NULL)
	{
		int			k = toplevel ? 1 : 0;

		row = &evicted_ctl->overflow[k];
		if (row->evicted_since == 0)
			row->evicted_since = now;
		evicted_ctl->overflow_users[k] |= OID_BIT(userid);
		evicted_ctl->overflow_dbs[k] |= OID_BIT(dbid);
	}
	return row;
}

/*
 * pgss_ng_evicted_fold
 *		Fold counters c (and wait samples per type, if not NULL) of key's
 *		statement into its remainder row, counting entries more entries (1: an
 *		evicted entry; 0: a flush that found its entry evicted); if log is
 *		given (and the log on), write it into the ring as the newest.  O(1);
 *		takes the pgss_ng_evicted LWLock exclusively (innermost); no ERROR.
 */
void
pgss_ng_evicted_fold(const PgssNgStmtKey *key, const PgssNgCounters *c,
					 const uint32 *wait_samples, int64 entries,
					 const PgssNgEvictionLogEntry *log)
{
	PgssNgEvictedRow *row;
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(evicted_lock, LW_EXCLUSIVE);
	row = row_for(key->userid, key->dbid, key->toplevel, now);
	pgss_ng_counters_add_sums(&row->counters, c);
	if (wait_samples != NULL)
		for (int t = 0; t < PGSS_NG_WAIT_NTYPES; t++)
			row->wait_samples[t] += wait_samples[t];
	row->entries += entries;
	if (log != NULL && evicted_ctl->log_size > 0)
	{
		PgssNgEvictionLogEntry *slot;

		slot = &evicted_ctl->log[evicted_ctl->log_written %
								 evicted_ctl->log_size];
		*slot = *log;
		slot->evicted_at = now;
		evicted_ctl->log_written++;
		if (evicted_ctl->log_count < evicted_ctl->log_size)
			evicted_ctl->log_count++;
	}
	LWLockRelease(evicted_lock);
}

/*
 * pgss_ng_eviction_log_copy
 *		A palloc'd copy of the eviction log, oldest first (*n entries), each
 *		text cut at its encoding's last character boundary within
 *		PGSS_NG_EVICTION_LOG_TEXT - 1 bytes (the cut is made here, at a read,
 *		not per victim).  The LWLock is held shared while copying; the memory
 *		(CurrentMemoryContext) is allocated before.
 */
PgssNgEvictionLogEntry *
pgss_ng_eviction_log_copy(int *n)
{
	int			size = evicted_ctl->log_size;
	PgssNgEvictionLogEntry *out;
	uint64		first;
	uint64		k;
	int			i = 0;

	out = palloc(sizeof(PgssNgEvictionLogEntry) * Max(size, 1));
	LWLockAcquire(evicted_lock, LW_SHARED);
	first = evicted_ctl->log_written - evicted_ctl->log_count;
	for (k = first; k < evicted_ctl->log_written; k++)
		out[i++] = evicted_ctl->log[k % size];
	LWLockRelease(evicted_lock);
	for (int j = 0; j < i; j++)
		if (out[j].qlen > 0)
			out[j].qlen = pg_encoding_mbcliplen(out[j].encoding, out[j].query,
												out[j].qlen,
												PGSS_NG_EVICTION_LOG_TEXT - 1);
	*n = i;
	return out;
}

/*
 * pgss_ng_evicted_clear
 *		Clear the rows of userid and dbid (InvalidOid: any); clearing all
 *		clears the overflow rows and the eviction log too.  An overflow row
 *		whose masks say it may hold their sums is cleared whole (evicted_since
 *		restarts at its next fold).  From a reset, <name>_dealloc held; takes
 *		the pgss_ng_evicted LWLock exclusively.
 */
void
pgss_ng_evicted_clear(Oid userid, Oid dbid)
{
	HASH_SEQ_STATUS status;
	PgssNgEvictedRow *row;
	int			k;

	LWLockAcquire(evicted_lock, LW_EXCLUSIVE);
	hash_seq_init(&status, evicted_hash);
	while ((row = hash_seq_search(&status)) != NULL)
	{
		if ((userid == InvalidOid || row->key.userid == userid) &&
			(dbid == InvalidOid || row->key.dbid == dbid))
			hash_search(evicted_hash, &row->key, HASH_REMOVE, NULL);
	}
	for (k = 0; k < 2; k++)
	{
		if ((userid == InvalidOid ||
			 (evicted_ctl->overflow_users[k] & OID_BIT(userid)) != 0) &&
			(dbid == InvalidOid ||
			 (evicted_ctl->overflow_dbs[k] & OID_BIT(dbid)) != 0))
		{
			memset(&evicted_ctl->overflow[k], 0, sizeof(PgssNgEvictedRow));
			evicted_ctl->overflow_users[k] = 0;
			evicted_ctl->overflow_dbs[k] = 0;
		}
	}
	if (userid == InvalidOid && dbid == InvalidOid)
	{
		evicted_ctl->log_written = 0;
		evicted_ctl->log_count = 0;
	}
	LWLockRelease(evicted_lock);
}

/*
 * pgss_ng_eviction_log_remove
 *		Take the entries a partial reset with filter f removes out of the
 *		eviction log, keeping the others in their order (the newest stay
 *		where they are, the older move up to them).  Called by a reset with
 *		<name>_dealloc held.  Takes the pgss_ng_evicted LWLock exclusively;
 *		O(log size).
 */
void
pgss_ng_eviction_log_remove(const PgssNgResetFilter *f)
{
	int			size = evicted_ctl->log_size;
	uint64		w;
	uint64		k;
	uint64		first;

	if (size == 0)
		return;
	LWLockAcquire(evicted_lock, LW_EXCLUSIVE);
	first = evicted_ctl->log_written - evicted_ctl->log_count;
	w = evicted_ctl->log_written;
	/* newest first: a slot is written to only once it has been read */
	for (k = evicted_ctl->log_written; k > first; k--)
	{
		PgssNgEvictionLogEntry *e = &evicted_ctl->log[(k - 1) % size];

		if (stmt_reset_match(f, &e->key))
			continue;
		w--;
		if (w != k - 1)
			evicted_ctl->log[w % size] = *e;
	}
	evicted_ctl->log_count = (int) (evicted_ctl->log_written - w);
	LWLockRelease(evicted_lock);
}

/*
 * pgss_ng_evicted_copy
 *		A palloc'd copy of the rows (the overflow rows, key userid and dbid
 *		InvalidOid, only when something was folded into them), their number
 *		in *n; with only_userid valid, only that role's rows.  The
 *		pgss_ng_evicted LWLock is held shared while copying.  Memory:
 *		CurrentMemoryContext (allocated before the lock is taken).
 */
PgssNgEvictedRow *
pgss_ng_evicted_copy(Oid only_userid, int *n)
{
	PgssNgEvictedRow *rows;
	HASH_SEQ_STATUS status;
	PgssNgEvictedRow *row;
	int			i = 0;
	int			k;

	rows = palloc(sizeof(PgssNgEvictedRow) * (PGSS_NG_EVICTED_ROWS + 2));
	LWLockAcquire(evicted_lock, LW_SHARED);
	hash_seq_init(&status, evicted_hash);
	while ((row = hash_seq_search(&status)) != NULL)
	{
		if (i == PGSS_NG_EVICTED_ROWS)
		{
			hash_seq_term(&status);
			break;
		}
		if (only_userid == InvalidOid || row->key.userid == only_userid)
			rows[i++] = *row;
	}
	for (k = 0; k < 2 && only_userid == InvalidOid; k++)
		if (evicted_ctl->overflow[k].evicted_since != 0)
		{
			rows[i] = evicted_ctl->overflow[k];
			memset(&rows[i].key, 0, sizeof(PgssNgStmtKey));
			rows[i].key.toplevel = (k == 1);
			i++;
		}
	LWLockRelease(evicted_lock);
	*n = i;
	return rows;
}

/*
 * pgss_ng_evicted_restore
 *		Add a saved row (from the stats file) to the remainder: its sums
 *		and entries, evicted_since the earlier of the two.  A saved
 *		overflow row (userid InvalidOid) goes to the overflow row.  Takes
 *		the pgss_ng_evicted LWLock exclusively.
 */
void
pgss_ng_evicted_restore(const PgssNgEvictedRow *saved)
{
	PgssNgEvictedRow *row;

	LWLockAcquire(evicted_lock, LW_EXCLUSIVE);
	if (saved->key.userid == InvalidOid)
	{
		int			k = saved->key.toplevel ? 1 : 0;

		row = &evicted_ctl->overflow[k];
		if (row->evicted_since == 0)
			row->evicted_since = saved->evicted_since;
		/* whose sums it holds was not saved: anybody's */
		evicted_ctl->overflow_users[k] = ~UINT64CONST(0);
		evicted_ctl->overflow_dbs[k] = ~UINT64CONST(0);
	}
	else
		row = row_for(saved->key.userid, saved->key.dbid,
					  saved->key.toplevel, saved->evicted_since);
	pgss_ng_counters_add_sums(&row->counters, &saved->counters);
	for (int t = 0; t < PGSS_NG_WAIT_NTYPES; t++)
		row->wait_samples[t] += saved->wait_samples[t];
	row->entries += saved->entries;
	row->evicted_since = Min(row->evicted_since, saved->evicted_since);
	LWLockRelease(evicted_lock);
}
