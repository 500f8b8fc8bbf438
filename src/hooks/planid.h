/*-------------------------------------------------------------------------
 *
 * planid.h
 *	  Plan identity for the hooks (planid.c): the plan id of a statement's
 *	  plan, and the capture of a new plan's EXPLAIN text; GUC
 *	  pgss_ng.track_plans.
 *
 * Locking: none of its own (the plan rows' are stmt/plans.h's).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_PLANID_H
#define PGSS_NG_PLANID_H

#include "executor/execdesc.h"
#include "nodes/plannodes.h"

extern void pgss_ng_planid_init(void);
extern uint64 pgss_ng_planid_compute(const PlannedStmt *ps);
extern void pgss_ng_planid_planned(PlannedStmt *ps);
extern uint64 pgss_ng_planid_exec(QueryDesc *queryDesc, bool toplevel);

#endif							/* PGSS_NG_PLANID_H */
