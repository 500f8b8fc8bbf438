/*-------------------------------------------------------------------------
 *
 * rowform.h
 *	  Rows of a set-returning function's result built without
 *	  heap_form_tuple's per-column generality (rowform.c).
 *
 * Locking: none.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_ROWFORM_H
#define PGSS_NG_ROWFORM_H

#include "access/tupdesc.h"
#include "utils/tuplestore.h"

typedef struct PgssNgRowForm PgssNgRowForm;

extern PgssNgRowForm *pgss_ng_rowform_make(TupleDesc tupdesc);
extern void pgss_ng_rowform_put(PgssNgRowForm *rf, Tuplestorestate *store,
								const Datum *values, const bool *nulls);

#endif							/* PGSS_NG_ROWFORM_H */
