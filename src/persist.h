/*-------------------------------------------------------------------------
 *
 * persist.h
 *	  Statistics that survive a clean restart: the pgss_ng writer
 *	  background worker and its stats file (see persist.c).
 *
 * Locking: none of its own; the writer takes the kind layer's locks
 * through the statement kind.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_PERSIST_H
#define PGSS_NG_PERSIST_H

extern void pgss_ng_persist_init(void);

#endif							/* PGSS_NG_PERSIST_H */
