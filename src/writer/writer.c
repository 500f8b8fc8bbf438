/*-------------------------------------------------------------------------
 *
 * writer.c
 *	  The pgss_ng writer, a background worker with shared memory access:
 *	  it publishes pgss_ng.max to every process (at start and on SIGHUP,
 *	  evicting past it), restores the stats file at start and saves it at
 *	  a clean shutdown (statsfile.c; the format is stmt_saved.h's), and in
 *	  between samples wait events (sampler.c).  docs/design.md,
 *	  "Persistence"; locking: the kind layer's, reading or restoring.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/bgworker_internals.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/pidfile.h"
#include "utils/timestamp.h"

#include "pgver.h"
#include "compat/settings_mirror.h"
#include "sampler.h"
#include "statsfile.h"
#include "writer.h"
#include "stmt/stmt_saved.h"

/* Longest the writer waits for backends to flush and detach (ms). */
#define PGSS_NG_WRITER_WAIT_MS	30000

static volatile sig_atomic_t shutdown_requested = false;

/*
 * GUC pgss_ng.save (or pg_stat_statements.save where that is in effect:
 * settings_mirror.c): write the stats file at shutdown, read it at start
 */
static bool persist_save = true;

PGDLLEXPORT void pgss_ng_writer_main(Datum main_arg);

/*
 * count_registered_workers
 *		Number of background workers registered so far (postmaster, while
 *		preloading): RegisterBackgroundWorker returns nothing, and this is
 *		how pgss_ng_writer_init tells whether its worker got in.
 */
static int
count_registered_workers(void)
{
	PGSS_NG_BGWORKER_ITER iter;
	int			n = 0;

	PGSS_NG_BGWORKER_FOREACH(iter)
		n++;
	return n;
}

/*
 * pgss_ng_writer_init
 *		Define pgss_ng.save and register the writer worker.  Called from
 *		_PG_init while preloading.  If the worker cannot be registered (too
 *		low max_worker_processes), say so once with a WARNING and remove
 *		the stats file of an earlier run, which would be stale at the next
 *		start.  The postmaster's working directory is the data directory by
 *		then.
 */
void
pgss_ng_writer_init(void)
{
	BackgroundWorker worker;
	int			before;

	pgss_ng_define_paired_bool(PGSS_NG_PAIRED_SAVE, "pgss_ng.save",
							   "Save pgss_ng statistics across server shutdowns.",
							   &persist_save, true, PGC_SIGHUP);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "pgss_ng", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "pgss_ng_writer_main", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "pgss_ng writer", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "pgss_ng writer", BGW_MAXLEN);

	before = count_registered_workers();
	RegisterBackgroundWorker(&worker);
	if (count_registered_workers() > before)
		return;

	/*
	 * Not registered (RegisterBackgroundWorker said why, at LOG): nothing
	 * loads or saves statistics in this run, so the file of an earlier
	 * run would be stale at the next start.  Remove it now.
	 */
	ereport(WARNING,
			(errmsg("pgss_ng statistics will not be loaded or saved: its writer could not be registered (max_worker_processes = %d is too low)",
					max_worker_processes),
			 errdetail("The statistics file \"%s\" of an earlier run is removed, as it would be stale at the next start.  Changes of pgss_ng.max take hold only at the next start.",
					   PGSS_NG_STAT_FILE),
			 errhint("Raise max_worker_processes.")));
	if (unlink(PGSS_NG_STAT_FILE) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m",
						PGSS_NG_STAT_FILE)));
}

/*
 * writer_reload
 *		If a reload was asked for (SIGHUP), read the configuration again,
 *		publish pgss_ng.max to every process (pgss_ng_stmt_publish_max) and
 *		evict at once if the table is now above it.  Called by the writer's
 *		main loop and between two records of the restore, so that a
 *		reload takes hold promptly whatever backends are doing.
 */
static void
writer_reload(void)
{
	if (!ConfigReloadPending)
		return;
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	pgss_ng_stmt_publish_max();
	pgss_ng_stmt_enforce_max();
}

/*
 * postmaster_stopping
 *		Whether the postmaster is shutting down: it writes "stopping" as
 *		the status line of postmaster.pid (in the data directory, our
 *		working directory) when a shutdown request arrives, before it
 *		signals any child.  False if the file cannot be read.
 */
static bool
postmaster_stopping(void)
{
	FILE	   *f;
	char		line[MAXPGPATH];
	int			lineno = 0;
	bool		stopping = false;

	f = AllocateFile("postmaster.pid", "r");
	if (f == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
	{
		if (++lineno == LOCK_FILE_LINE_PM_STATUS)
		{
			stopping = strncmp(line, PM_STATUS_STOPPING,
							   strlen(PM_STATUS_STOPPING)) == 0;
			break;
		}
	}
	FreeFile(f);
	return stopping;
}

/*
 * handle_sigterm
 *		SIGTERM handler of the writer: remember it and wake the main loop.
 */
static void
handle_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	shutdown_requested = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * pgss_ng_writer_main
 *		Entry point of the pgss_ng writer background worker (see the file
 *		header).  Memory: a context of its own under TopMemoryContext.
 *		Errors: an ERROR ends the worker (exit code 1, restarted by the
 *		postmaster), never the server.
 */
void
pgss_ng_writer_main(Datum main_arg)
{
	MemoryContext cxt;
	int			waited = 0;

	pqsignal(SIGTERM, handle_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();

	cxt = AllocSetContextCreate(TopMemoryContext, "pgss_ng writer",
								ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(cxt);

	if (!pgss_ng_stmt_attach())
		proc_exit(0);

	/* a restarted writer may have missed reloads: publish what it read */
	pgss_ng_stmt_publish_max();

	/*
	 * Load only once per life of shared memory: a writer restarted after a
	 * stray SIGTERM finds the statistics live, and the file it wrote then
	 * is stale.
	 */
	if (persist_save && !pgss_ng_stmt_loaded())
		pgss_ng_statsfile_load(writer_reload);
	else
		unlink(PGSS_NG_STAT_FILE);
	pgss_ng_stmt_set_loaded();
	MemoryContextReset(cxt);

	while (!shutdown_requested)
	{
		long		timeout = pgss_ng_sampler_timeout();

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH |
						 (timeout >= 0 ? WL_TIMEOUT : 0), timeout,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		writer_reload();
		pgss_ng_sampler_run();
	}

	/*
	 * A SIGTERM that is not a shutdown (pg_terminate_backend): exit at
	 * once with code 1, so that the postmaster starts a new writer, which
	 * publishes pgss_ng.max again.  Waiting for backends that are not
	 * leaving, or saving a file the next writer would remove, would only
	 * leave reloads unpublished meanwhile.
	 */
	if (!postmaster_stopping())
		proc_exit(1);

	/* let every backend flush its pending counts and detach */
	while (pgss_ng_stmt_nattached() > 1 && waited < PGSS_NG_WRITER_WAIT_MS)
	{
		(void) WaitLatch(MyLatch, WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10L,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		waited += 10;
	}
	if (pgss_ng_stmt_nattached() > 1)
		ereport(LOG,
				(errmsg("pgss_ng writer saves statistics while %u processes are still attached",
						pgss_ng_stmt_nattached() - 1)));

	pgss_ng_sampler_finish();
	if (persist_save)
		pgss_ng_statsfile_write();
	else
		unlink(PGSS_NG_STAT_FILE);

	/* a shutdown: exit code 0, which the postmaster does not log */
	proc_exit(0);
}
