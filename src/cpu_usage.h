/*-------------------------------------------------------------------------
 *
 * cpu_usage.h
 *	  CPU time of planning and execution (GUC pgss_ng.track_cpu), sampled
 *	  with getrusage() for the hooks in pgss_ng.c.
 *
 * Locking: none; everything here is backend-local.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_CPU_USAGE_H
#define PGSS_NG_CPU_USAGE_H

#include <sys/resource.h>

#include "executor/execdesc.h"

#include "stmt_kind.h"

extern void pgss_ng_cpu_init(void);
extern bool pgss_ng_cpu_enabled(void);
extern void pgss_ng_cpu_sample(struct rusage *sample);
extern void pgss_ng_cpu_since(const struct rusage *start, PgssNgCpuUsage *out);
extern void pgss_ng_cpu_start_keep(QueryDesc *queryDesc,
								   const struct rusage *start);
extern bool pgss_ng_cpu_start_take(QueryDesc *queryDesc, struct rusage *start);

#endif							/* PGSS_NG_CPU_USAGE_H */
