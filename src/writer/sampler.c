/*-------------------------------------------------------------------------
 *
 * sampler.c
 *	  The wait-event sampler, run by the writer between its other duties:
 *	  each pgss_ng.wait_sample_period ms a sample of every backend running a
 *	  tracked statement (its innermost key and wait event: stmt/waits.c),
 *	  weighted by the periods since the last tick, grouped by statement and
 *	  folded into the entries each PGSS_NG_SAMPLER_FOLD_MS.  Owns the
 *	  samples waiting for an entry not made yet.  docs/design.md, "Wait events".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "sampler.h"
#include "stmt/stmt_kind.h"
#include "stmt/waits.h"

/*
 * How often the groups are added to their entries (ms), or sooner when
 * more than PGSS_NG_SAMPLER_FOLD_GROUPS statements have samples waiting.
 */
#define PGSS_NG_SAMPLER_FOLD_MS		1000
#define PGSS_NG_SAMPLER_FOLD_GROUPS	512

/* How long samples wait for their entry after the last one (ms). */
#define PGSS_NG_SAMPLER_GRACE_MS	60000

/* Statements whose samples may wait at once. */
#define PGSS_NG_SAMPLER_MAX_WAITING	4096

/* The most periods one tick counts for. */
#define PGSS_NG_SAMPLER_MAX_WEIGHT	10

/* The samples of one statement not yet added to its entry. */
typedef struct SamplerGroup
{
	PgssNgStmtKey key;			/* hash key: keep first */
	uint64		total;			/* samples in batch */
	TimestampTz last_sample;	/* of the statement */
	PgssNgWaitBatch batch;		/* what a tick touches in its first lines */
} SamplerGroup;

static HTAB *groups = NULL;
static PgssNgWaitSample *samples = NULL;
static int	max_samples = 0;
static TimestampTz next_tick = 0;	/* 0: sampling was off */
static TimestampTz next_fold = 0;
static TimestampTz last_tick = 0;	/* 0: none since it was */
static int64 carry_us = 0;		/* time since last_tick not yet counted */

/*
 * sampler_setup
 *		Make the sample buffer and the hash of groups, once
 *		(TopMemoryContext).
 */
static void
sampler_setup(void)
{
	HASHCTL		info;

	max_samples = pgss_ng_waits_max_samples();
	samples = MemoryContextAlloc(TopMemoryContext,
								 sizeof(PgssNgWaitSample) * Max(max_samples, 1));
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(PgssNgStmtKey);
	info.entrysize = sizeof(SamplerGroup);
	info.hcxt = TopMemoryContext;
	groups = hash_create("pgss_ng sampler", 256, &info,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * group_add
 *		Add one sample, counting for weight periods, to its statement's
 *		group, made if needed; a sample that finds no room (too many
 *		groups) is lost, and an event that finds none in its group's batch
 *		is counted by type only, its event row dropped.
 */
static void
group_add(const PgssNgWaitSample *smp, uint32 weight, TimestampTz now,
		  int64 *lost, int64 *events_dropped)
{
	PgssNgStmtKey key;
	SamplerGroup *g;
	bool		found;
	uint32		ev = smp->wait_event_info;
	int			e;

	memset(&key, 0, sizeof(key));
	key.userid = smp->userid;
	key.dbid = smp->dbid;
	key.queryid = smp->queryid;
	key.toplevel = smp->toplevel;
	g = hash_search(groups, &key, HASH_FIND, NULL);
	if (g == NULL)
	{
		if (hash_get_num_entries(groups) >= PGSS_NG_SAMPLER_MAX_WAITING)
		{
			*lost += weight;
			return;
		}
		g = hash_search(groups, &key, HASH_ENTER, &found);
		memset(&g->batch, 0, sizeof(g->batch));
		g->total = 0;
	}
	g->last_sample = now;
	g->total += weight;
	g->batch.samples[pgss_ng_wait_type(ev)] += weight;
	if (ev == 0)
		return;
	for (e = 0; e < g->batch.nevents && g->batch.events[e].event != ev; e++)
		;
	if (e == g->batch.nevents)
	{
		if (e == PGSS_NG_WAIT_MAX_EVENTS)
		{
			*events_dropped += weight;
			return;
		}
		g->batch.events[e].event = ev;
		g->batch.events[e].count = 0;
		g->batch.nevents++;
	}
	g->batch.events[e].count += weight;
}

/*
 * fold
 *		Add each group to its entry, now: a group whose entry is not there
 *		waits for the next fold, or is lost after its grace.  Counts what
 *		was lost in *lost.
 */
static void
fold(TimestampTz now, int64 *lost)
{
	HASH_SEQ_STATUS status;
	SamplerGroup *g;

	hash_seq_init(&status, groups);
	while ((g = hash_seq_search(&status)) != NULL)
	{
		if (pgss_ng_waits_add(&g->key, &g->batch))
			hash_search(groups, &g->key, HASH_REMOVE, NULL);
		else if (TimestampDifferenceExceeds(g->last_sample, now,
											PGSS_NG_SAMPLER_GRACE_MS))
		{
			*lost += g->total;
			hash_search(groups, &g->key, HASH_REMOVE, NULL);
		}
	}
	pgss_ng_waits_set_added(now);
}

/*
 * sample_once
 *		One tick, counting for weight periods: sample every backend and
 *		group the samples by statement; when a fold is due, add each group
 *		to its entry (a group whose entry is not there is tried again at
 *		the next fold, or lost after its grace).
 */
static void
sample_once(TimestampTz now, uint32 weight)
{
	int			n;
	int64		lost = 0;
	int64		events_dropped = 0;

	n = pgss_ng_waits_collect(samples, max_samples);
	for (int i = 0; i < n; i++)
		group_add(&samples[i], weight, now, &lost, &events_dropped);

	if (now >= next_fold ||
		hash_get_num_entries(groups) > PGSS_NG_SAMPLER_FOLD_GROUPS)
	{
		next_fold = now + PGSS_NG_SAMPLER_FOLD_MS * INT64CONST(1000);
		fold(now, &lost);
	}
	if (lost > 0)
		pgss_ng_waits_count_lost(lost);
	if (events_dropped > 0)
		pgss_ng_waits_count_events_dropped(events_dropped);
}

/*
 * pgss_ng_sampler_timeout
 *		How long the writer may sleep before the next tick (ms), -1 while
 *		sampling is off.
 */
long
pgss_ng_sampler_timeout(void)
{
	TimestampTz now;

	if (pgss_ng_wait_sample_period == 0)
		return -1;
	if (next_tick == 0)
		return 0;
	now = GetCurrentTimestamp();
	if (now >= next_tick)
		return 0;
	return (long) ((next_tick - now + 999) / 1000);
}

/*
 * pgss_ng_sampler_run
 *		Take a tick if one is due (a period after the last one), counting
 *		for the whole periods since the last one, the rest carried to the
 *		next.  Memory: the buffers made at the first tick.
 */
void
pgss_ng_sampler_run(void)
{
	TimestampTz now;
	int64		period_us = (int64) pgss_ng_wait_sample_period * 1000;
	int64		weight = 1;

	if (period_us == 0)
	{
		next_tick = 0;
		last_tick = 0;
		carry_us = 0;
		return;
	}
	now = GetCurrentTimestamp();
	if (next_tick != 0 && now < next_tick)
		return;
	if (groups == NULL)
		sampler_setup();
	if (last_tick != 0)
	{
		int64		elapsed = now - last_tick + carry_us;

		weight = elapsed / period_us;
		carry_us = elapsed - weight * period_us;
		/* past the cap the rest is lost; a clock stepped back counts one */
		if (weight >= PGSS_NG_SAMPLER_MAX_WEIGHT || weight < 1)
		{
			weight = Max(Min(weight, PGSS_NG_SAMPLER_MAX_WEIGHT), 1);
			carry_us = 0;
		}
	}
	sample_once(now, (uint32) weight);
	last_tick = now;
	next_tick = now + period_us;
}

/*
 * pgss_ng_sampler_finish
 *		At shutdown, once the backends have flushed (their entries exist):
 *		add the samples still grouped, so that the stats file has them.
 */
void
pgss_ng_sampler_finish(void)
{
	int64		lost = 0;

	if (groups == NULL)
		return;
	fold(GetCurrentTimestamp(), &lost);
	if (lost > 0)
		pgss_ng_waits_count_lost(lost);
}
