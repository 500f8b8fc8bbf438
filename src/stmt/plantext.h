/*-------------------------------------------------------------------------
 *
 * plantext.h
 *	  The plan text arena (plantext.c): the EXPLAIN (COSTS OFF) texts of plan
 *	  rows, in the statement kind's DSA area, capped by
 *	  pgss_ng.plan_text_memory apart from the query texts.
 *	  Locking: none.  The cap is reserved by compare-and-exchange; a text is
 *	  written before its row is published and never changed after.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_PLANTEXT_H
#define PGSS_NG_PLANTEXT_H

#include "utils/dsa.h"

/* Arena counters, as shown by pgss_ng_info. */
typedef struct PgssNgPlanTextStats
{
	int64		bytes;			/* bytes of stored texts and their headers */
	int64		limit_bytes;	/* pgss_ng.plan_text_memory in bytes */
	int64		dropped;		/* texts that did not fit */
	int64		failures;		/* EXPLAIN captures that raised an ERROR */
} PgssNgPlanTextStats;

extern void pgss_ng_plantext_init(void);
extern Size pgss_ng_plantext_shmem_size(void);
extern void pgss_ng_plantext_shmem_startup(void);

extern dsa_pointer pgss_ng_plantext_store(dsa_area *area, const char *text,
										  int len);
extern const char *pgss_ng_plantext_data(dsa_area *area, dsa_pointer text,
										 int *len);
extern void pgss_ng_plantext_release(dsa_area *area, dsa_pointer text);
extern void pgss_ng_plantext_count_failure(void);
extern void pgss_ng_plantext_stats(PgssNgPlanTextStats *stats);
extern void pgss_ng_plantext_reset_counters(void);

#endif							/* PGSS_NG_PLANTEXT_H */
