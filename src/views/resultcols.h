/*-------------------------------------------------------------------------
 *
 * resultcols.h
 *	  The columns a read function makes, matched with those its SQL
 *	  declares (resultcols.c): every earlier extension version's functions
 *	  declare fewer (new ones are only appended); any other declaration is
 *	  an ERROR that says what to run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_RESULTCOLS_H
#define PGSS_NG_RESULTCOLS_H

#include "access/tupdesc.h"
#include "fmgr.h"

/* A column the library makes: its name and type in the SQL declaration. */
typedef struct PgssNgColumn
{
	const char *name;
	Oid			type;
} PgssNgColumn;

/* A column the library makes (made), declared under another name. */
typedef struct PgssNgColumnAlias
{
	const char *declared;
	const char *made;
} PgssNgColumnAlias;

/*
 * How the declared columns are filled from the made ones: column i of the
 * declaration is made column map[i].  identity: map[i] == i for every
 * declared column (the declaration is the first natts made columns), so
 * a row of made columns can be handed over as it is.
 */
typedef struct PgssNgResultMap
{
	int			natts;
	bool		identity;
	int		   *map;
	Datum	   *values;			/* a row of declared columns, unless identity */
	bool	   *nulls;
} PgssNgResultMap;

extern void pgss_ng_result_map(PgssNgResultMap *rm, FunctionCallInfo fcinfo,
							   TupleDesc declared, const PgssNgColumn *made,
							   int nmade, const PgssNgColumnAlias *aliases);
extern void pgss_ng_result_project(PgssNgResultMap *rm, Datum **values,
								   bool **nulls);
extern TupleDesc pgss_ng_result_row_begin(PgssNgResultMap *rm,
										  FunctionCallInfo fcinfo,
										  const PgssNgColumn *made,
										  int nmade);
extern Datum pgss_ng_result_row_end(PgssNgResultMap *rm, TupleDesc tupdesc,
									Datum *values, bool *nulls);

#endif							/* PGSS_NG_RESULTCOLS_H */
