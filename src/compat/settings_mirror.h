/*-------------------------------------------------------------------------
 *
 * settings_mirror.h
 *	  pg_stat_statements.max, .track, .track_utility, .track_planning and
 *	  .save as read-only mirrors of pgss_ng's own GUCs, for tools that read
 *	  them from pg_settings (see settings_mirror.c).
 *
 * Locking: none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_CONTRIB_GUCS_H
#define PGSS_NG_CONTRIB_GUCS_H

extern void pgss_ng_settings_mirror_init(void);

#endif							/* PGSS_NG_CONTRIB_GUCS_H */
