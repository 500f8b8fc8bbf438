/*-------------------------------------------------------------------------
 *
 * stmt_saved.h
 *	  The stats file's format in one place: header, info block
 *	  (PgssNgSavedInfo), entry record (PgssNgStmtRecord), format version, and
 *	  the writer's entry points (stmt_saved.c, stmt_restore.c).  Any change to
 *	  what is saved bumps PGSS_NG_FILE_VERSION and records the new layout
 *	  below it ("make saved-layout"): the build fails until then.
 *	  docs/design.md, "Persistence".
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_SAVED_H
#define PGSS_NG_STMT_SAVED_H

#include "hist.h"
#include "plans.h"
#include "stmt_evicted.h"
#include "stmt_kind.h"

#define PGSS_NG_FILE_MAGIC		0x50474E47	/* "PGNG" */

/*
 * Format version: raise it whenever the file's layout changes (the
 * versions: docs/design.md, "Persistence").
 */
#define PGSS_NG_FILE_VERSION	10

/*
 * The layout of version 10 on 64-bit builds (checked in stmt_saved.c):
 * sizeof(PgssNgSavedInfo), sizeof(PgssNgStmtRecord),
 * sizeof(PgssNgEvictedRow) and the fingerprint
 * PGSS_NG_STMT_RECORD_LAYOUT of the record's members and of the members
 * of what it contains.
 */
#define PGSS_NG_SAVED_INFO_SIZE		56
#define PGSS_NG_STMT_RECORD_SIZE	560
#define PGSS_NG_STMT_RECORD_LAYOUT	UINT64CONST(223984)
#define PGSS_NG_EVICTED_ROW_SIZE	560
#define PGSS_NG_PLAN_RECORD_SIZE	80

/*
 * The counters saved in the stats file's info block (the info counters
 * of pgss_ng_info that survive a restart), written as the struct is.
 */
typedef struct PgssNgSavedInfo
{
	int64		dealloc;
	int64		dropped;
	int64		backstop_skips;
	TimestampTz stats_reset;
	int64		entries_evicted;
	int64		eviction_ns;	/* pgss_ng_info.eviction_time, in ns */
	TimestampTz last_eviction;	/* 0: none */
} PgssNgSavedInfo;

/*
 * One saved statement entry, written as the struct is; the counts of its
 * histograms' windows follow it (hist_len[0] + hist_len[1] uint32, the
 * planning histogram's first, as in PgssNgHistPair), then qlen bytes of
 * query text (qlen -1: no text), then its nwait_events rows of wait events
 * (PgssNgWaitRow).
 */
typedef struct PgssNgStmtRecord
{
	PgssNgStmtKey key;
	PgssNgCounters counters;
	bool		have_minmax[PGSS_NG_NUMPHASE];
	bool		hist_lost[PGSS_NG_HIST_NHIST];	/* see hist_store.h */
	uint16		hist_lo[PGSS_NG_HIST_NHIST];	/* each histogram's window */
	uint16		hist_len[PGSS_NG_HIST_NHIST];	/* (0: empty) */
	int32		encoding;
	int32		qlen;
	TimestampTz stats_since;
	TimestampTz minmax_stats_since;
	TimestampTz last_executed;	/* 0: none */
	uint32		wait_samples[PGSS_NG_WAIT_NTYPES];	/* per type */
	int32		nwait_events;	/* rows of wait events after the text */
	double		usage;			/* eviction value when saved: last */
} PgssNgStmtRecord;

/*
 * A saved statement's plans (plans.c), after its query text: how many plan
 * rows follow, and its plans_seen and last_plan_change.
 */
typedef struct PgssNgPlansSaved
{
	int32		nrows;
	int32		seen;
	TimestampTz last_change;	/* 0: none */
} PgssNgPlansSaved;

/*
 * One saved plan row, written as the struct is; textlen bytes of its
 * EXPLAIN text follow (textlen -1: none).
 */
typedef struct PgssNgPlanRecord
{
	uint64		planid;
	int64		calls;
	double		total_time;
	double		min_time;
	double		max_time;
	int64		rows;
	TimestampTz first_call;
	TimestampTz last_call;
	int32		encoding;		/* the text's */
	int32		textlen;
	bool		have_minmax;
	bool		text_tried;		/* a capture of its text was tried */
} PgssNgPlanRecord;

/*
 * The fingerprint of this build's record layout: a term per member, its
 * offset weighted by its name's length.
 */
#define PGSS_NG_LAYOUT_TERM(type, member) \
	(((uint64) offsetof(type, member) + 1) * sizeof(#member))
#define PGSS_NG_COUNTER_TERM(name, ctype, sqltype, measured) \
	+ PGSS_NG_LAYOUT_TERM(PgssNgCounters, name)
#define PGSS_NG_STMT_RECORD_LAYOUT_OF_BUILD \
	(PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, key) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, counters) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, have_minmax) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, hist_lost) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, hist_lo) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, hist_len) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, encoding) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, qlen) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, stats_since) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, minmax_stats_since) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, last_executed) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, usage) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, wait_samples) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtRecord, nwait_events) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgWaitRow, wait_event_info) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgWaitRow, samples) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtKey, userid) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtKey, dbid) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtKey, queryid) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgStmtKey, toplevel) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, calls) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, total_time) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, min_time) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, max_time) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, mean_time) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, sum_var_time) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, cpu_samples) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, user_time) + \
	 PGSS_NG_LAYOUT_TERM(PgssNgCounters, system_time) \
	 PGSS_NG_SUM_COUNTERS(PGSS_NG_COUNTER_TERM) \
	 PGSS_NG_OWN_COUNTERS(PGSS_NG_COUNTER_TERM))

/* what pgss_ng_stmt_save_records calls for each entry */
typedef void (*PgssNgSavedRecordFn) (const char *data, Size len,
									 double usage, void *arg);

/*
 * A restore in progress (the writer's load of the stats file), and what it
 * did so far: pgss_ng_stmt_restore_start() begins it, the info block and
 * each record are then restored through it.
 */
typedef struct PgssNgRestore
{
	uint64		full_resets;	/* full resets since shared memory was
								 * made that the saved statistics are
								 * newer than: none (0) */
	Size		restored;		/* records whose counts are in */
	Size		texts_dropped;	/* of those, saved texts that did not fit */
	Size		skipped;		/* records that could not be restored */
	Size		reset_away;		/* records a partial reset made since the
								 * start removed: not restored */
	Size		evicted;		/* records beyond max, evicted into the
								 * remainder */
	bool		reset;			/* a full reset came: nothing more may be
								 * restored */
} PgssNgRestore;

extern void pgss_ng_stmt_save_records(PgssNgSavedRecordFn fn, void *arg);
extern void pgss_ng_stmt_save_info(PgssNgSavedInfo *out);
extern bool pgss_ng_stmt_record_wellformed(const char *data, Size len);
extern void pgss_ng_stmt_restore_start(PgssNgRestore *rs);
extern void pgss_ng_stmt_restore_info(PgssNgRestore *rs,
									  const PgssNgSavedInfo *in,
									  const char *evicted, uint32 nevicted);
extern void pgss_ng_stmt_restore_record(PgssNgRestore *rs, const char *data,
										Size len);
extern void pgss_ng_stmt_fold_record(PgssNgRestore *rs, const char *data,
									  Size len);
extern PgssNgEvictedRow *pgss_ng_stmt_save_evicted(int *n);
extern int	pgss_ng_stmt_restore_max(void);
extern bool pgss_ng_stmt_restore_backing_off(void);
extern bool pgss_ng_stmt_loaded(void);
extern void pgss_ng_stmt_set_loaded(void);

#endif							/* PGSS_NG_STMT_SAVED_H */
