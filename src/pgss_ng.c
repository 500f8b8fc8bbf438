/*-------------------------------------------------------------------------
 *
 * pgss_ng.c
 *	  Module entry: _PG_init calls each module's init function, so that
 *	  every GUC is defined by the module that reads it, and requests and
 *	  creates shared memory for all of them.  The layers are drawn in
 *	  docs/design.md ("Layers").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "compat/settings_mirror.h"
#include "hooks/hooks.h"
#include "hooks/measure.h"
#include "hooks/planid.h"
#include "stmt/qtext.h"
#include "stmt/stmt_kind.h"
#include "writer/writer.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void pgss_ng_shmem_request(void);
static void pgss_ng_shmem_startup(void);

/*
 * _PG_init
 *		When preloaded: let each module define its GUCs (the hooks' in
 *		hooks.c, pgss_ng.track_cpu in measure.c, pgss_ng.max in stmt_kind.c,
 *		pgss_ng.query_text_memory in qtext.c, pgss_ng.save in writer.c),
 *		then the pg_stat_statements.* mirrors of some of them for tools
 *		(settings_mirror.c), and install the hooks.
 *
 * Loaded without shared_preload_libraries (e.g. by CREATE EXTENSION), the
 * module installs nothing; its SQL functions then raise an ERROR.
 */
void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	EnableQueryId();

	pgss_ng_stmt_init();
	pgss_ng_qtext_init();

	/* pgss_ng.track, track_utility, track_planning; the hooks */
	pgss_ng_hooks_init();

	/* pgss_ng.track_cpu */
	pgss_ng_cpu_init();

	/* pgss_ng.track_plans (plans_max and plan_text_memory: the kind's) */
	pgss_ng_planid_init();

	/* the writer's GUC and worker */
	pgss_ng_writer_init();

	/* last: they show the GUCs above (unless pg_stat_statements is loaded) */
	pgss_ng_settings_mirror_init();

	MarkGUCPrefixReserved("pgss_ng");

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = pgss_ng_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = pgss_ng_shmem_startup;
}

/*
 * pgss_ng_shmem_request
 *		Request the main shared memory and named LWLocks of the statement
 *		kind, and the parallel workers' CPU slots (measure.c).
 */
static void
pgss_ng_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();

	RequestAddinShmemSpace(add_size(pgss_ng_stmt_shmem_size(),
									pgss_ng_cpu_shmem_size()));
	pgss_ng_stmt_shmem_request();
}

/*
 * pgss_ng_shmem_startup
 *		Create the statement kind's shared state and the parallel workers'
 *		CPU slots (postmaster, and again after a crash reinitialized shared
 *		memory: statistics start empty).
 */
static void
pgss_ng_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	pgss_ng_stmt_shmem_startup();
	pgss_ng_cpu_shmem_startup();
}
