/*-------------------------------------------------------------------------
 *
 * measure.h
 *	  What a planning or an execution used, measured for the hooks in
 *	  pgss_ng.c (measure.c): wall time, buffer and WAL usage around a call,
 *	  and CPU time (GUC pgss_ng.track_cpu), sampled with getrusage().
 *
 * Locking: none; everything here is backend-local.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_MEASURE_H
#define PGSS_NG_MEASURE_H

#include <sys/resource.h>

#include "executor/execdesc.h"
#include "executor/instrument.h"

#include "stmt_kind.h"

/*
 * What a planning or utility statement used, measured around the
 * call (pgss_ng_measure_start, pgss_ng_measure_stop): start values, then the
 * differences.  Times in ms.
 */
typedef struct PgssNgMeasure
{
	instr_time	start;
	BufferUsage bufusage_start;
	WalUsage	walusage_start;
	double		duration_ms;
	BufferUsage bufusage;
	WalUsage	walusage;
	bool		cpu_sampled;	/* pgss_ng.track_cpu was on at the start */
	struct rusage cpu_start;
	PgssNgCpuTime cpu;			/* valid if cpu_sampled */
} PgssNgMeasure;

extern void pgss_ng_measure_start(PgssNgMeasure *m);
extern void pgss_ng_measure_stop(PgssNgMeasure *m);

extern void pgss_ng_cpu_init(void);
extern bool pgss_ng_cpu_enabled(void);
extern void pgss_ng_cpu_sample(struct rusage *sample);
extern void pgss_ng_cpu_since(const struct rusage *start, PgssNgCpuTime *out);
extern void pgss_ng_cpu_start_keep(QueryDesc *queryDesc,
								   const struct rusage *start);
extern bool pgss_ng_cpu_start_take(QueryDesc *queryDesc, struct rusage *start);

#endif							/* PGSS_NG_MEASURE_H */
