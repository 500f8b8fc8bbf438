/*-------------------------------------------------------------------------
 *
 * stmt_kind.h
 *	  The statement kind's API for the hooks, _PG_init and the writer: key,
 *	  PgssNgCall, set-up, attachment, recording, flush.  Counters:
 *	  stmt_counters.h; readers: stmt_read.h, stmt_reset.h, stmt_evicted.h;
 *	  the stats file: stmt_saved.h.  docs/design.md, "Layers".
 *	  Locking: the kind layer's entry lock; no caller needs to hold one.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STMT_KIND_H
#define PGSS_NG_STMT_KIND_H

#include "executor/instrument.h"
#include "jit/jit.h"
#include "pgver.h"

#include "kind/kind.h"
#include "stmt_counters.h"

/*
 * Parallel workers of one execution (PostgreSQL 18 measures them; NULL is
 * passed where there are none to record: planning, utility statements,
 * servers before 18).
 */
typedef struct PgssNgParallelWorkers
{
	int64		to_launch;		/* workers planned */
	int64		launched;		/* workers actually launched */
} PgssNgParallelWorkers;

/* Identity of a statement entry.  Padding must be zero (memcmp'd). */
typedef struct PgssNgStmtKey
{
	Oid			userid;
	Oid			dbid;
	uint64		queryid;
	bool		toplevel;		/* executed at top level */
} PgssNgStmtKey;

/*
 * What one pgss_ng_stmt_count_call() records, built by a hook with
 * designated initializers (an omitted field is 0 or NULL); the statement
 * is at query_location, query_len in its source string.  With jstate
 * (parse analysis) only the entry is made, with the normalized text, and
 * the fields after jstate are not read.  A counter a hook measures is one
 * field here, read by count_one() (stmt_backend.c).
 */
typedef struct PgssNgCall
{
	const char *query;			/* the source string */
	int			query_location; /* the statement's place in it */
	int			query_len;
	uint64		queryid;
	bool		toplevel;		/* executed at top level */
	JumbleState *jstate;		/* parse analysis only, or NULL */
	PgssNgPhase phase;
	double		total_time;		/* ms */
	uint64		rows;
	const BufferUsage *bufusage;
	const WalUsage *walusage;
	const JitInstrumentation *jitusage; /* or NULL: no JIT */
	const PgssNgParallelWorkers *parallel;	/* or NULL: none measured */
	const PgssNgCpuTime *cpu;	/* or NULL: not sampled */
	uint64		planid;			/* an execution's plan (plans.h), 0: none */
} PgssNgCall;

/* the statement kind's handle in the kind layer */
extern PgssNgKind *pgss_ng_stmt_kind;

/* set-up (_PG_init, shared memory hooks): stmt_kind.c */
extern void pgss_ng_stmt_init(void);
extern Size pgss_ng_stmt_shmem_size(void);
extern void pgss_ng_stmt_shmem_request(void);
extern void pgss_ng_stmt_shmem_startup(void);
extern void pgss_ng_stmt_publish_max(void);

/*
 * pgss_ng_stmt_ready
 *		Is the statement kind set up (library preloaded, shared memory
 *		made)?  The hooks record nothing otherwise.
 */
struct PgssNgStmtControl;
extern struct PgssNgStmtControl *pgss_ng_stmt_ctl;

static inline bool
pgss_ng_stmt_ready(void)
{
	return pgss_ng_stmt_ctl != NULL;
}

/* a backend's attachment, with its exit sequence: stmt_backend.c */
extern bool pgss_ng_stmt_attach(void);
extern uint32 pgss_ng_stmt_nattached(void);

/* the hooks: stmt_backend.c */
extern void pgss_ng_stmt_count_call(const PgssNgCall *s);
extern void pgss_ng_flush(void);

/* the writer, after a reload: stmt_backend.c */
extern void pgss_ng_stmt_enforce_max(void);

/*
 * failed executions: at a tracked statement's start, when frames.h's
 * pgss_ng_stmt_attention asks for it
 */
extern void pgss_ng_stmt_flush_failures(void);

#endif							/* PGSS_NG_STMT_KIND_H */
