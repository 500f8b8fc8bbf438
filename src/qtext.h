/*-------------------------------------------------------------------------
 *
 * qtext.h
 *	  The query text store: where the normalized text of each statement
 *	  entry lives in shared memory.  A small interface so that the capped,
 *	  deduplicating arena can replace the plain DSA allocations behind it.
 *
 * Locking: a stored text is immutable until released; the caller makes
 * sure no reader can still reach a text it releases (the kind layer frees
 * an entry, and with it its text, only after its last reference is gone).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_QTEXT_H
#define PGSS_NG_QTEXT_H

#include "utils/dsa.h"

extern dsa_pointer pgss_ng_qtext_store(dsa_area *area, const char *text,
									   int len);
extern char *pgss_ng_qtext_copy(dsa_area *area, dsa_pointer text, int len);
extern void pgss_ng_qtext_release(dsa_area *area, dsa_pointer text);

#endif							/* PGSS_NG_QTEXT_H */
