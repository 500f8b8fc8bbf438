/*-------------------------------------------------------------------------
 *
 * writer.h
 *	  Statistics that survive a clean restart: the pgss_ng writer
 *	  background worker (writer.c) and its stats file (statsfile.c).
 *
 * Locking: none of its own; the writer takes the kind layer's locks
 * through the statement kind.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_WRITER_H
#define PGSS_NG_WRITER_H

extern void pgss_ng_writer_init(void);

#endif							/* PGSS_NG_WRITER_H */
