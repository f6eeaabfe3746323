package session

// Rows of the system catalog that the Python clients' queries find in
// PostgreSQL beyond pgcatalog.go's: information_schema's domains in
// pg_type, which SQLAlchemy's get_columns reads.

import "github.com/hummer-db/hummer/sql"

// informationSchemaDomains are PostgreSQL 15's domains of
// information_schema, each over its base type (typbasetype, typtypmod),
// with oids in information_schema's range (13000 to 13999), which
// pg_type_is_visible says are not on the search path.
func informationSchemaDomains() []row {
	domains := []struct {
		name         string
		base, typmod int64
		def          any
	}{
		{"cardinal_number", 23, -1, nil},
		{"character_data", 1043, -1, nil},
		{"sql_identifier", 19, -1, nil},
		{"time_stamp", 1184, 2, "CURRENT_TIMESTAMP(2)"},
		{"yes_or_no", 1043, 7, nil},
	}
	var rows []row
	for i, d := range domains {
		r := row{"oid": sql.InformationSchemaOID + 900 + int64(i), "typname": d.name,
			"typnamespace": sql.InformationSchemaOID, "typowner": sql.SuperuserOID, "typlen": typeLen(d.base),
			"typbyval": typeLen(d.base) > 0 && typeLen(d.base) <= 8, "typtype": "d", "typcategory": typeCategory(d.base),
			"typisdefined": true, "typdelim": ",", "typinput": "domain_in", "typoutput": sql.PgTypes()[d.base] + "out",
			"typalign": "i", "typstorage": storage(d.base), "typbasetype": d.base, "typtypmod": d.typmod,
			"typdefault": d.def}
		if d.base == 1043 || d.base == 19 {
			r["typcollation"] = 100
		}
		rows = append(rows, r)
	}
	return rows
}
