/*-------------------------------------------------------------------------
 *
 * settings_mirror.c
 *	  The settings monitoring tools read from pg_settings under
 *	  pg_stat_statements' names (pg_stat_statements.max, .track,
 *	  .track_utility, .track_planning, .save): read-only mirrors of
 *	  pgss_ng's own, defined only when pg_stat_statements itself is not in
 *	  shared_preload_libraries (it then defines them).
 *
 * A mirror shows (SHOW, current_setting(), pg_settings.setting) the
 * current value of the pgss_ng GUC it mirrors, through its show hook, so
 * the two are always equal; the mirror's own variable is never read.  Its
 * type, and its context, are those of the pgss_ng GUC it shows.  Setting
 * a mirror is refused by its check hook (everything but its built-in
 * default), with a hint that names the pgss_ng GUC to set: SET and ALTER
 * SYSTEM get an ERROR, a value in postgresql.conf (or from ALTER ROLE /
 * DATABASE) a WARNING when it is applied at start or at connection and a
 * LOG line at each reload, and is ignored.  Each pgss_ng GUC stays owned
 * by the module that reads it; this file only reads them by name.
 *
 * Locking: none (the GUC machinery's, in the postmaster at start and in
 * each backend).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "settings_mirror.h"

/* pg_stat_statements' values of .track (pgss_ng.track has the same) */
static const struct config_enum_entry track_options[] =
{
	{"none", 0, false},
	{"top", 1, false},
	{"all", 2, false},
	{NULL, 0, false}
};

/* the mirrors' own variables: set by the GUC machinery, never read */
static int	mirror_max;
static int	mirror_track;
static bool mirror_track_utility;
static bool mirror_track_planning;
static bool mirror_save;

/*
 * mirror_check
 *		Check hook body of the mirror name of pgss_ng's target: accept only
 *		the built-in default, refuse any other source with a message that
 *		says what to set instead.
 */
static bool
mirror_check(const char *name, const char *target, GucSource source)
{
	if (source == PGC_S_DEFAULT)
		return true;
	GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
	GUC_check_errmsg("parameter \"%s\" cannot be set", name);
	GUC_check_errdetail("pg_stat_statements is not loaded: \"%s\" shows the value of \"%s\".",
						name, target);
	GUC_check_errhint("Set \"%s\" instead.", target);
	return false;
}

/*
 * MIRROR_HOOKS
 *		The check and show hooks of one mirror (the hooks get no name, so
 *		each mirror has its own pair).
 */
#define MIRROR_HOOKS(id, ctype, name, target) \
static bool \
id##_check(ctype *newval, void **extra, GucSource source) \
{ \
	return mirror_check(name, target, source); \
} \
static const char * \
id##_show(void) \
{ \
	return GetConfigOption(target, false, false); \
}

MIRROR_HOOKS(max, int, "pg_stat_statements.max", "pgss_ng.max")
MIRROR_HOOKS(track, int, "pg_stat_statements.track", "pgss_ng.track")
MIRROR_HOOKS(track_utility, bool, "pg_stat_statements.track_utility",
			 "pgss_ng.track_utility")
MIRROR_HOOKS(track_planning, bool, "pg_stat_statements.track_planning",
			 "pgss_ng.track_planning")
MIRROR_HOOKS(save, bool, "pg_stat_statements.save", "pgss_ng.save")

/*
 * contrib_preloaded
 *		Is pg_stat_statements in shared_preload_libraries (by name, with or
 *		without a directory or file suffix), before or after pgss_ng?
 */
static bool
contrib_preloaded(void)
{
	char	   *raw = pstrdup(shared_preload_libraries_string);
	List	   *libs;
	ListCell   *lc;
	bool		found = false;

	/* a list the postmaster could not split loaded nothing, nor us */
	if (SplitDirectoriesString(raw, ',', &libs))
	{
		foreach(lc, libs)
		{
			char	   *lib = (char *) lfirst(lc);
			char	   *base = last_dir_separator(lib);

			base = base ? base + 1 : lib;
			if (strncmp(base, "pg_stat_statements", 18) == 0 &&
				(base[18] == '\0' || base[18] == '.'))
				found = true;
		}
	}
	list_free_deep(libs);
	pfree(raw);
	return found;
}

/*
 * pgss_ng_settings_mirror_init
 *		From _PG_init, after every pgss_ng GUC is defined: define the
 *		mirrors, unless pg_stat_statements is preloaded too.  Defaults and
 *		ranges are pg_stat_statements'; contexts are those of the pgss_ng
 *		GUCs shown.
 */
void
pgss_ng_settings_mirror_init(void)
{
	if (contrib_preloaded())
		return;

	DefineCustomIntVariable("pg_stat_statements.max",
							"Shows pgss_ng.max: pg_stat_statements is not loaded (read-only).",
							"Set pgss_ng.max instead.",
							&mirror_max,
							5000, 100, INT_MAX / 2,
							PGC_SIGHUP, 0,
							max_check, NULL, max_show);
	DefineCustomEnumVariable("pg_stat_statements.track",
							 "Shows pgss_ng.track: pg_stat_statements is not loaded (read-only).",
							 "Set pgss_ng.track instead.",
							 &mirror_track,
							 1, track_options,
							 PGC_SUSET, 0,
							 track_check, NULL, track_show);
	DefineCustomBoolVariable("pg_stat_statements.track_utility",
							 "Shows pgss_ng.track_utility: pg_stat_statements is not loaded (read-only).",
							 "Set pgss_ng.track_utility instead.",
							 &mirror_track_utility,
							 true,
							 PGC_SUSET, 0,
							 track_utility_check, NULL, track_utility_show);
	DefineCustomBoolVariable("pg_stat_statements.track_planning",
							 "Shows pgss_ng.track_planning: pg_stat_statements is not loaded (read-only).",
							 "Set pgss_ng.track_planning instead.",
							 &mirror_track_planning,
							 false,
							 PGC_SUSET, 0,
							 track_planning_check, NULL, track_planning_show);
	DefineCustomBoolVariable("pg_stat_statements.save",
							 "Shows pgss_ng.save: pg_stat_statements is not loaded (read-only).",
							 "Set pgss_ng.save instead.",
							 &mirror_save,
							 true,
							 PGC_SIGHUP, 0,
							 save_check, NULL, save_show);
}
