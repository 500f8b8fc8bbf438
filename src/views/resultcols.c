/*-------------------------------------------------------------------------
 *
 * resultcols.c
 *	  The columns a read function makes, matched by name and type with
 *	  those its SQL declares: a function of an earlier extension version
 *	  (a newer library, ALTER EXTENSION ... UPDATE not yet run) declares
 *	  fewer and gets exactly those; an unknown name or another type is an
 *	  ERROR naming the ALTER EXTENSION to run.  No lock but AccessShareLock
 *	  on pg_extension, on that ERROR's path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/regproc.h"
#include "utils/rel.h"

#include "resultcols.h"

/*
 * extension_version
 *		extversion of the extension ext, NULL if there is none.
 */
static char *
extension_version(Oid ext)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *version = NULL;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		bool		isnull;
		Datum		d = heap_getattr(tup, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = TextDatumGetCString(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * report_mismatch
 *		ERROR: the function being called declares column attname (of type
 *		declared_type), which the library does not make (made_type
 *		InvalidOid) or makes as made_type.  The hint names the extension
 *		the function belongs to and the command that aligns the two.
 */
static void
report_mismatch(FunctionCallInfo fcinfo, const char *attname,
				Oid declared_type, Oid made_type)
{
	Oid			fn = fcinfo->flinfo->fn_oid;
	Oid			ext = getExtensionOfObject(ProcedureRelationId, fn);
	char	   *extname = OidIsValid(ext) ? get_extension_name(ext) : NULL;
	char	   *version = extname ? extension_version(ext) : NULL;

	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 OidIsValid(made_type) ?
			 errmsg("function %s declares result column \"%s\" as type %s, but the library makes it as type %s",
					format_procedure(fn), attname,
					format_type_be(declared_type), format_type_be(made_type)) :
			 errmsg("function %s declares result column \"%s\", which the library does not make",
					format_procedure(fn), attname),
			 extname ?
			 errhint("The SQL objects of extension \"%s\" (version %s) do not match its library: run ALTER EXTENSION %s UPDATE, or restart the server if the library was installed after it started.",
					 extname, version ? version : "?",
					 quote_identifier(extname)) :
			 errhint("Declare only result columns that the library makes, with their types.")));
}

/*
 * pgss_ng_result_map
 *		Match each column of declared (the result type of the function
 *		fcinfo calls) with the made column of its name (through aliases,
 *		an array ended by a NULL declared name, or NULL) and fill rm.
 *		ERROR (report_mismatch) for a column not made or of another type.
 *		Memory: rm's arrays in CurrentMemoryContext.
 */
void
pgss_ng_result_map(PgssNgResultMap *rm, FunctionCallInfo fcinfo,
				   TupleDesc declared, const PgssNgColumn *made, int nmade,
				   const PgssNgColumnAlias *aliases)
{
	int			i;

	rm->natts = declared->natts;
	rm->identity = true;
	rm->map = palloc(sizeof(int) * Max(rm->natts, 1));
	for (i = 0; i < rm->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(declared, i);
		const char *name = NameStr(att->attname);
		int			j = -1;

		if (i < nmade && strcmp(made[i].name, name) == 0)
			j = i;				/* the usual case: the same place */
		else
		{
			const PgssNgColumnAlias *a;

			for (a = aliases; a != NULL && a->declared != NULL; a++)
			{
				if (strcmp(a->declared, name) == 0)
				{
					name = a->made;
					break;
				}
			}
			for (j = nmade - 1; j >= 0; j--)
			{
				if (strcmp(made[j].name, name) == 0)
					break;
			}
		}
		if (j < 0)
			report_mismatch(fcinfo, NameStr(att->attname), att->atttypid,
							InvalidOid);
		if (made[j].type != att->atttypid)
			report_mismatch(fcinfo, NameStr(att->attname), att->atttypid,
							made[j].type);
		rm->map[i] = j;
		if (j != i)
			rm->identity = false;
	}
	rm->values = NULL;
	rm->nulls = NULL;
	if (!rm->identity)
	{
		rm->values = palloc(sizeof(Datum) * rm->natts);
		rm->nulls = palloc(sizeof(bool) * rm->natts);
	}
}

/*
 * pgss_ng_result_project
 *		Make *values and *nulls, a row of made columns, a row of the
 *		declared ones: unchanged when rm->identity, else projected into
 *		rm's own row.
 */
void
pgss_ng_result_project(PgssNgResultMap *rm, Datum **values, bool **nulls)
{
	int			i;

	if (rm->identity)
		return;
	for (i = 0; i < rm->natts; i++)
	{
		rm->values[i] = (*values)[rm->map[i]];
		rm->nulls[i] = (*nulls)[rm->map[i]];
	}
	*values = rm->values;
	*nulls = rm->nulls;
}

/*
 * pgss_ng_result_row_begin / _end
 *		A function returning one row of made columns: the declared row
 *		type, mapped (begin); the row projected onto it, as a Datum (end).
 */
TupleDesc
pgss_ng_result_row_begin(PgssNgResultMap *rm, FunctionCallInfo fcinfo,
						 const PgssNgColumn *made, int nmade)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	pgss_ng_result_map(rm, fcinfo, tupdesc, made, nmade, NULL);
	return tupdesc;
}

Datum
pgss_ng_result_row_end(PgssNgResultMap *rm, TupleDesc tupdesc,
					   Datum *values, bool *nulls)
{
	pgss_ng_result_project(rm, &values, &nulls);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}
