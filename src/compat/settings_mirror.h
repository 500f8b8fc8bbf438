/*-------------------------------------------------------------------------
 *
 * settings_mirror.h
 *	  pgss_ng's settings that pg_stat_statements' names set too
 *	  (pg_stat_statements.max, .track, .track_utility, .track_planning,
 *	  .save): each owner defines its GUC here and reads the value in
 *	  effect from its own variable (see settings_mirror.c).
 *
 * Locking: none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_SETTINGS_MIRROR_H
#define PGSS_NG_SETTINGS_MIRROR_H

#include "utils/guc.h"

/* The settings pg_stat_statements has too, by their pgss_ng name. */
typedef enum PgssNgPaired
{
	PGSS_NG_PAIRED_MAX,			/* pgss_ng.max */
	PGSS_NG_PAIRED_TRACK,		/* pgss_ng.track */
	PGSS_NG_PAIRED_TRACK_UTILITY,	/* pgss_ng.track_utility */
	PGSS_NG_PAIRED_TRACK_PLANNING,	/* pgss_ng.track_planning */
	PGSS_NG_PAIRED_SAVE,		/* pgss_ng.save */
	PGSS_NG_N_PAIRED
} PgssNgPaired;

extern void pgss_ng_define_paired_int(PgssNgPaired which, const char *name,
									  const char *short_desc, int *effective,
									  int boot, int min, int max,
									  GucContext context);
extern void pgss_ng_define_paired_enum(PgssNgPaired which, const char *name,
									   const char *short_desc, int *effective,
									   int boot,
									   const struct config_enum_entry *options,
									   GucContext context);
extern void pgss_ng_define_paired_bool(PgssNgPaired which, const char *name,
									   const char *short_desc, bool *effective,
									   bool boot, GucContext context);
extern void pgss_ng_settings_mirror_init(void);

#endif							/* PGSS_NG_SETTINGS_MIRROR_H */
