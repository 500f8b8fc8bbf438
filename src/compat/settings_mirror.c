/*-------------------------------------------------------------------------
 *
 * settings_mirror.c
 *	  pg_stat_statements' settings under its names, unless it is preloaded
 *	  itself: pg_stat_statements.max, .track, .track_utility,
 *	  .track_planning and .save, defined as pg_stat_statements defines them,
 *	  set pgss_ng's of the same name; the one in effect is chosen by the
 *	  level each was set at, carried as its GUC extra through every unwind.
 *	  docs/design.md, "The compat objects".  No lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "pgver.h"
#include "settings_mirror.h"

/* Where and when a value was set: the GUC extra of every value of a pair. */
typedef struct SetAt
{
	GucSource	source;
	uint64		seq;			/* order of the checks in this process */
} SetAt;

/* One name's current value, as its assign hook last saw it. */
typedef struct Side
{
	int			value;			/* a bool as 0 or 1 */
	SetAt		at;
} Side;

#define OWN		0				/* the pgss_ng.* name */
#define MIRROR 1				/* the pg_stat_statements.* name */

/* A pgss_ng setting and pg_stat_statements' name for it. */
typedef struct Pair
{
	int		   *effective_int;	/* the owner's variable (int, enum) */
	bool	   *effective_bool; /* or (bool) */
	const struct config_enum_entry *options;	/* of an enum */
	int			largest;		/* the owner's maximum (an int) */
	int			boot;
	Side		side[2];
	int			var_int[2];		/* the GUCs' own variables: never read */
	bool		var_bool[2];
	char		shown[16];
} Pair;

static Pair pairs[PGSS_NG_N_PAIRED];
static uint64 checks_made = 0;

/*
 * check_set_at
 *		Check hook body of either name: any value is valid; its extra says
 *		at which level (source) and, within this process, when it was set.
 */
static bool
check_set_at(void **extra, GucSource source)
{
	SetAt	   *at = (SetAt *) PGSS_NG_GUC_EXTRA_ALLOC(sizeof(SetAt));

	if (at == NULL)
	{
		GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
		GUC_check_errmsg("out of memory");
		return false;
	}
	at->source = source;
	at->seq = ++checks_made;
	*extra = at;
	return true;
}

/*
 * assign_side
 *		Assign hook body: side of pair which now has value, set as extra
 *		says; choose the value in effect again and store it in the owner's
 *		variable.  Runs at every change of either name, an unwind of the
 *		GUC stack included.
 */
static void
assign_side(PgssNgPaired which, int side, int value, void *extra)
{
	Pair	   *p = &pairs[which];
	const Side *own = &p->side[OWN];
	const Side *con = &p->side[MIRROR];
	bool		mirror_wins;
	int			v;

	p->side[side].value = value;
	if (extra != NULL)
		p->side[side].at = *(const SetAt *) extra;
	else
	{
		p->side[side].at.source = PGC_S_DEFAULT;
		p->side[side].at.seq = 0;
	}

	if (con->at.source != own->at.source)
		mirror_wins = con->at.source > own->at.source;
	else
		mirror_wins = con->at.source == PGC_S_SESSION &&
			con->at.seq > own->at.seq;
	v = mirror_wins ? con->value : own->value;
	if (p->effective_bool != NULL)
		*p->effective_bool = v != 0;
	else if (p->effective_int != NULL)
		*p->effective_int = Min(v, p->largest);
}

/*
 * show_pair
 *		Show hook body of either name: the value in effect.
 */
static const char *
show_pair(Pair *p)
{
	const struct config_enum_entry *e;

	if (p->effective_bool != NULL)
		return *p->effective_bool ? "on" : "off";
	if (p->effective_int == NULL)
		return "";
	for (e = p->options; e != NULL && e->name != NULL; e++)
		if (e->val == *p->effective_int && !e->hidden)
			return e->name;
	snprintf(p->shown, sizeof(p->shown), "%d", *p->effective_int);
	return p->shown;
}

/*
 * PAIR_HOOKS
 *		The hooks of one pair (hooks get no name, so each pair has its
 *		own): one check hook and one show hook for both names, an assign
 *		hook per name.
 */
#define PAIR_HOOKS(id, which, ctype) \
static bool \
id##_check(ctype *newval, void **extra, GucSource source) \
{ \
	return check_set_at(extra, source); \
} \
static void \
id##_assign_own(ctype newval, void *extra) \
{ \
	assign_side(which, OWN, (int) newval, extra); \
} \
static void \
id##_assign_mirror(ctype newval, void *extra) \
{ \
	assign_side(which, MIRROR, (int) newval, extra); \
} \
static const char * \
id##_show(void) \
{ \
	return show_pair(&pairs[which]); \
}

PAIR_HOOKS(max, PGSS_NG_PAIRED_MAX, int)
PAIR_HOOKS(track, PGSS_NG_PAIRED_TRACK, int)
PAIR_HOOKS(track_utility, PGSS_NG_PAIRED_TRACK_UTILITY, bool)
PAIR_HOOKS(track_planning, PGSS_NG_PAIRED_TRACK_PLANNING, bool)
PAIR_HOOKS(save, PGSS_NG_PAIRED_SAVE, bool)

/* The hooks of each pair's pgss_ng name (int ones for ints and enums). */
static const struct
{
	GucIntCheckHook int_check;
	GucIntAssignHook int_assign;
	GucBoolCheckHook bool_check;
	GucBoolAssignHook bool_assign;
	GucShowHook show;
} own_hooks[PGSS_NG_N_PAIRED] =
{
	[PGSS_NG_PAIRED_MAX] = {max_check, max_assign_own, NULL, NULL, max_show},
	[PGSS_NG_PAIRED_TRACK] = {track_check, track_assign_own, NULL, NULL,
	track_show},
	[PGSS_NG_PAIRED_TRACK_UTILITY] = {NULL, NULL, track_utility_check,
	track_utility_assign_own, track_utility_show},
	[PGSS_NG_PAIRED_TRACK_PLANNING] = {NULL, NULL, track_planning_check,
	track_planning_assign_own, track_planning_show},
	[PGSS_NG_PAIRED_SAVE] = {NULL, NULL, save_check, save_assign_own,
	save_show},
};

#define MIRROR_LONG_DESC \
	"pg_stat_statements is not loaded.  Of this and the pgss_ng setting, " \
	"the value set at the more specific level is in effect; at the same " \
	"level, in a session the one set last, elsewhere the pgss_ng setting."

/*
 * pair_init
 *		Before the owner's GUC is defined (its assign hook runs at once):
 *		where the value in effect goes, and both names at their default
 *		(pg_stat_statements' defaults are pgss_ng's).
 */
static Pair *
pair_init(PgssNgPaired which, int *effective_int, bool *effective_bool,
		  int boot)
{
	Pair	   *p = &pairs[which];
	int			side;

	p->effective_int = effective_int;
	p->effective_bool = effective_bool;
	p->largest = INT_MAX;
	p->boot = boot;
	for (side = OWN; side <= MIRROR; side++)
	{
		p->side[side].value = boot;
		p->side[side].at.source = PGC_S_DEFAULT;
		p->side[side].at.seq = 0;
	}
	return p;
}

/*
 * pgss_ng_define_paired_int / _enum / _bool
 *		Define the owner's GUC name (from its module's init function, as
 *		DefineCustom*Variable would, with no long description or flags);
 *		*effective then always holds the value in effect of it and of
 *		pg_stat_statements' name for it.  An int of pg_stat_statements'
 *		above max counts as max.
 */
void
pgss_ng_define_paired_int(PgssNgPaired which, const char *name,
						  const char *short_desc, int *effective,
						  int boot, int min, int max, GucContext context)
{
	Pair	   *p = pair_init(which, effective, NULL, boot);

	p->largest = max;
	DefineCustomIntVariable(name, short_desc, NULL, &p->var_int[OWN],
							boot, min, max, context, 0,
							own_hooks[which].int_check,
							own_hooks[which].int_assign,
							own_hooks[which].show);
}

void
pgss_ng_define_paired_enum(PgssNgPaired which, const char *name,
						   const char *short_desc, int *effective, int boot,
						   const struct config_enum_entry *options,
						   GucContext context)
{
	Pair	   *p = pair_init(which, effective, NULL, boot);

	p->options = options;
	DefineCustomEnumVariable(name, short_desc, NULL, &p->var_int[OWN],
							 boot, options, context, 0,
							 own_hooks[which].int_check,
							 own_hooks[which].int_assign,
							 own_hooks[which].show);
}

void
pgss_ng_define_paired_bool(PgssNgPaired which, const char *name,
						   const char *short_desc, bool *effective,
						   bool boot, GucContext context)
{
	Pair	   *p = pair_init(which, NULL, effective, boot);

	DefineCustomBoolVariable(name, short_desc, NULL, &p->var_bool[OWN],
							 boot, context, 0,
							 own_hooks[which].bool_check,
							 own_hooks[which].bool_assign,
							 own_hooks[which].show);
}

/*
 * pg_stat_statements_preloaded
 *		Is pg_stat_statements in shared_preload_libraries (by name, with or
 *		without a directory or file suffix), before or after pgss_ng?
 */
static bool
pg_stat_statements_preloaded(void)
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
 *		From _PG_init, after every paired pgss_ng GUC is defined: define
 *		pg_stat_statements' names for them, as pg_stat_statements does
 *		(its ranges, defaults and contexts: .max postmaster, .save sighup,
 *		the others superuser), unless pg_stat_statements is preloaded too:
 *		then they are its own, and the pgss_ng settings alone are in effect.
 */
void
pgss_ng_settings_mirror_init(void)
{
	Pair	   *p;

	if (pg_stat_statements_preloaded())
		return;

	p = &pairs[PGSS_NG_PAIRED_MAX];
	DefineCustomIntVariable("pg_stat_statements.max",
							"Sets pgss_ng.max under pg_stat_statements' name.",
							MIRROR_LONG_DESC,
							&p->var_int[MIRROR],
							p->boot, 100, INT_MAX / 2,
							PGC_POSTMASTER, 0,
							max_check, max_assign_mirror, max_show);
	p = &pairs[PGSS_NG_PAIRED_TRACK];
	DefineCustomEnumVariable("pg_stat_statements.track",
							 "Sets pgss_ng.track under pg_stat_statements' name.",
							 MIRROR_LONG_DESC,
							 &p->var_int[MIRROR],
							 p->boot, p->options,
							 PGC_SUSET, 0,
							 track_check, track_assign_mirror, track_show);
	p = &pairs[PGSS_NG_PAIRED_TRACK_UTILITY];
	DefineCustomBoolVariable("pg_stat_statements.track_utility",
							 "Sets pgss_ng.track_utility under pg_stat_statements' name.",
							 MIRROR_LONG_DESC,
							 &p->var_bool[MIRROR],
							 p->boot != 0,
							 PGC_SUSET, 0,
							 track_utility_check, track_utility_assign_mirror,
							 track_utility_show);
	p = &pairs[PGSS_NG_PAIRED_TRACK_PLANNING];
	DefineCustomBoolVariable("pg_stat_statements.track_planning",
							 "Sets pgss_ng.track_planning under pg_stat_statements' name.",
							 MIRROR_LONG_DESC,
							 &p->var_bool[MIRROR],
							 p->boot != 0,
							 PGC_SUSET, 0,
							 track_planning_check,
							 track_planning_assign_mirror,
							 track_planning_show);
	p = &pairs[PGSS_NG_PAIRED_SAVE];
	DefineCustomBoolVariable("pg_stat_statements.save",
							 "Sets pgss_ng.save under pg_stat_statements' name.",
							 MIRROR_LONG_DESC,
							 &p->var_bool[MIRROR],
							 p->boot != 0,
							 PGC_SIGHUP, 0,
							 save_check, save_assign_mirror, save_show);
}
