/*-------------------------------------------------------------------------
 *
 * statsfile.h
 *	  The stats file, written at a clean shutdown and read at the writer's
 *	  start (statsfile.c).  Its format is stmt_saved.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_STATSFILE_H
#define PGSS_NG_STATSFILE_H

#include "pgstat.h"

#define PGSS_NG_STAT_FILE		PGSTAT_STAT_PERMANENT_DIRECTORY "/pgss_ng.stat"

extern void pgss_ng_statsfile_write(void);
extern void pgss_ng_statsfile_load(void (*between_records) (void));

#endif							/* PGSS_NG_STATSFILE_H */
