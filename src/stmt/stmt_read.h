/*-------------------------------------------------------------------------
 *
 * stmt_read.h
 *	  The readers' API (stmt_read.c): a snapshot of each entry, of the info
 *	  counters and of one entry's histograms, for the SQL functions.
 *	  docs/design.md, "What a reader sees".  Locking: each entry is copied
 *	  under its entry lock held shared; the caller holds none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_READ_H
#define PGSS_NG_STMT_READ_H

#include "datatype/timestamp.h"

#include "hist.h"
#include "qtext.h"
#include "stmt_kind.h"
#include "waits.h"

/* The quantiles shown per phase: p50, p90, p95, p99, p999. */
#define PGSS_NG_NUM_QUANTILES	5
extern const double pgss_ng_quantiles[PGSS_NG_NUM_QUANTILES];

/* The time group of one phase as a reader sees it (ms). */
typedef struct PgssNgTimeStats
{
	int64		calls;
	double		total;
	double		min;
	double		max;
	double		mean;
	double		stddev;			/* population standard deviation */
} PgssNgTimeStats;

/*
 * What a read (pgss_ng_stmt_read) copies besides the key, the counters
 * and the timestamps (flags).
 */
#define PGSS_NG_READ_TEXT		0x01	/* the query text */
#define PGSS_NG_READ_QUANTILES	0x02	/* the time quantiles */

/*
 * A reader's copy of one entry (pgss_ng_stmt_read), valid only during the
 * emit call it is given to.
 */
typedef struct PgssNgStmtSnapshot
{
	PgssNgStmtKey key;
	PgssNgTimeStats times[PGSS_NG_NUMPHASE];
	PgssNgCounters counters;	/* the sums; times are in times[] */
	/*
	 * time quantiles (ms) of pgss_ng_quantiles, NaN when no histogram;
	 * only with PGSS_NG_READ_QUANTILES
	 */
	double		quantiles[PGSS_NG_NUMPHASE][PGSS_NG_NUM_QUANTILES];
	TimestampTz stats_since;	/* entry creation */
	TimestampTz minmax_stats_since; /* creation or last min/max reset */
	TimestampTz last_executed;	/* flush of the last execution, 0: none */
	int			encoding;		/* the text's encoding */
	const text *query;			/* copy of the text (no NUL), or NULL;
								 * NULL without PGSS_NG_READ_TEXT */
	uint64		wait_samples[PGSS_NG_WAIT_NTYPES];	/* per type (waits.h) */
	int64		plans_seen;		/* plan rows made for it (plans.h) */
	TimestampTz last_plan_change;	/* the last one past the first, 0: none */
} PgssNgStmtSnapshot;

/* what pgss_ng_stmt_read calls for each entry */
typedef void (*PgssNgStmtEmitFn) (const PgssNgStmtSnapshot *es, void *arg);

/* A reader's copy of the info counters, as pgss_ng_info shows them. */
typedef struct PgssNgInfoSnapshot
{
	PgssNgKindCounters kind;	/* entries, dealloc, entries_evicted... */
	int64		dropped;		/* plannings/executions not recorded */
	TimestampTz stats_reset;	/* last full reset */
	PgssNgQtextStats qtext;		/* the text arena */
	int64		hist_bytes;		/* the time histograms' chunks */
	int64		hist_dropped;	/* times not kept in a histogram */
	int64		wait_events_dropped;	/* per-event rows dropped (waits.c) */
	int64		wait_samples_lost;	/* wait samples no entry took */
	TimestampTz wait_samples_added;	/* the sampler's last adding, 0: none */
} PgssNgInfoSnapshot;

extern void pgss_ng_stmt_read(int what, TimestampTz changed_since,
							  PgssNgStmtEmitFn emit, void *arg);
extern void pgss_ng_stmt_info(PgssNgInfoSnapshot *out);
extern bool pgss_ng_stmt_histograms(const PgssNgStmtKey *key,
									PgssNgHistPair *out);

#endif							/* PGSS_NG_STMT_READ_H */
