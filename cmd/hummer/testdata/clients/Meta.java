import java.sql.*;
import java.util.*;

/** pgjdbc's DatabaseMetaData as DBeaver and BI tools call it, and the
 *  ResultSetMetaData of a query, each call's rows in a stable text form, for
 *  cmd/hummer/jdbcmeta_test.go. Usage: java Meta.java URL USER.
 *
 *  What differs between servers by nature is normalised here: the connected
 *  database's name prints as DB, the product version as its major version,
 *  the connected user, granting or granted, as USER, and getTypeInfo keeps
 *  the types Hummer has (PostgreSQL lists every type it has, some 200). */
public class Meta {
  static String catalog, user;

  static String norm(String s) {
    if (s == null) return "NULL";
    return s.equals(catalog) ? "DB" : s;
  }

  /** normCol is norm for a value of column label: a grantor or grantee
   *  that is the connected user prints as USER. */
  static String normCol(String label, String s) {
    if (s != null && (label.equals("GRANTOR") || label.equals("GRANTEE")) && s.equals(user)) return "USER";
    return norm(s);
  }

  static void show(String name, ResultSet r) throws SQLException {
    show(name, r, null);
  }

  /** show prints r's column labels, then each row (only those whose first
   *  column filter holds, when filter is given) as values joined by |. */
  static void show(String name, ResultSet r, Set<String> keep) throws SQLException {
    ResultSetMetaData md = r.getMetaData();
    System.out.println("== " + name);
    StringBuilder h = new StringBuilder();
    for (int i = 1; i <= md.getColumnCount(); i++) h.append(i > 1 ? "|" : "").append(md.getColumnLabel(i).toUpperCase());
    System.out.println(h);
    int n = 0;
    while (r.next()) {
      if (keep != null && !keep.contains(r.getString(1))) continue;
      StringBuilder sb = new StringBuilder();
      for (int i = 1; i <= md.getColumnCount(); i++)
        sb.append(i > 1 ? "|" : "").append(normCol(md.getColumnLabel(i).toUpperCase(), r.getString(i)));
      System.out.println(sb);
      n++;
    }
    System.out.println("(" + n + " rows)");
    r.close();
  }

  interface Call { ResultSet run() throws SQLException; }

  /** call shows one metadata call, or the SQLSTATE it failed with. */
  static void call(Connection c, String name, Call f, Set<String> keep) {
    try {
      show(name, f.run(), keep);
    } catch (SQLException e) {
      System.out.println("== " + name);
      System.out.println("ERROR " + e.getSQLState() + ": " + e.getMessage().split("\n")[0]);
    }
  }

  public static void main(String[] a) throws Exception {
    try (Connection c = DriverManager.getConnection(a[0], a[1], "")) {
      catalog = c.getCatalog();
      user = a[1];
      try (Statement st = c.createStatement()) {
        st.execute("DROP VIEW IF EXISTS v");
        st.execute("DROP TABLE IF EXISTS t");
        st.execute("DROP TABLE IF EXISTS t2");
        st.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(10,2), d DATE)");
        st.execute("INSERT INTO t VALUES (1, 'a', 1.50, DATE '2024-01-02'), (2, 'b', NULL, NULL)");
        st.execute("CREATE VIEW v AS SELECT id, name FROM t");
        st.execute("CREATE TABLE t2 (a BIGINT, b TEXT, n BIGINT DEFAULT 7, s TEXT DEFAULT 'x', ts TIMESTAMP, ok BOOLEAN, f DOUBLE PRECISION, PRIMARY KEY (b, a))");
      }
      DatabaseMetaData md = c.getMetaData();
      System.out.println("== product");
      System.out.println(md.getDatabaseProductName() + " " + md.getDatabaseMajorVersion());
      String version = md.getDatabaseProductVersion();
      System.out.println("version starts with major: " + version.startsWith(md.getDatabaseMajorVersion() + "."));
      System.out.println("catalog: " + norm(c.getCatalog()) + ", schema: " + c.getSchema());
      call(c, "getSchemas", () -> md.getSchemas(), null);
      call(c, "getSchemas(null, pub%)", () -> md.getSchemas(null, "pub%"), null);
      call(c, "getCatalogs", () -> md.getCatalogs(), Set.of(catalog));
      call(c, "getTableTypes", () -> md.getTableTypes(), null);
      call(c, "getTables TABLE VIEW", () -> md.getTables(null, "public", "%", new String[]{"TABLE", "VIEW"}), null);
      call(c, "getTables null types", () -> md.getTables(null, "public", "%", null), null);
      call(c, "getTables t", () -> md.getTables(null, null, "t", null), null);
      call(c, "getTables all schemas TABLE VIEW", () -> md.getTables(null, null, "%", new String[]{"TABLE", "VIEW"}), null);
      call(c, "getTables t%", () -> md.getTables(null, "public", "t%", new String[]{"TABLE"}), null);
      call(c, "getColumns public", () -> md.getColumns(null, "public", "%", "%"), null);
      call(c, "getColumns t na%", () -> md.getColumns(null, "public", "t", "na%"), null);
      call(c, "getTables null pattern", () -> md.getTables(null, "public", null, null), null);
      call(c, "getColumns null pattern", () -> md.getColumns(null, "public", "v", null), null);
      call(c, "getColumns t", () -> md.getColumns(null, "public", "t", "%"), null);
      call(c, "getColumns v", () -> md.getColumns(null, "public", "v", "%"), null);
      call(c, "getPrimaryKeys t", () -> md.getPrimaryKeys(null, "public", "t"), null);
      call(c, "getIndexInfo t", () -> md.getIndexInfo(null, "public", "t", false, true), null);
      call(c, "getColumns t2", () -> md.getColumns(null, "public", "t2", "%"), null);
      call(c, "getPrimaryKeys t2", () -> md.getPrimaryKeys(null, "public", "t2"), null);
      call(c, "getIndexInfo t2", () -> md.getIndexInfo(null, "public", "t2", false, true), null);
      call(c, "getIndexInfo t2 unique", () -> md.getIndexInfo(null, "public", "t2", true, false), null);
      call(c, "getPrimaryKeys any schema", () -> md.getPrimaryKeys(null, null, "t2"), null);
      call(c, "getImportedKeys t", () -> md.getImportedKeys(null, "public", "t"), null);
      call(c, "getExportedKeys t", () -> md.getExportedKeys(null, "public", "t"), null);
      call(c, "getCrossReference t t2", () -> md.getCrossReference(null, "public", "t", null, "public", "t2"), null);
      call(c, "getBestRowIdentifier t", () -> md.getBestRowIdentifier(null, "public", "t", DatabaseMetaData.bestRowSession, true), null);
      call(c, "getVersionColumns t", () -> md.getVersionColumns(null, "public", "t"), null);
      call(c, "getTablePrivileges t", () -> md.getTablePrivileges(null, "public", "t"), null);
      call(c, "getColumnPrivileges t", () -> md.getColumnPrivileges(null, "public", "t", "%"), null);
      call(c, "getProcedures public", () -> md.getProcedures(null, "public", "%"), null);
      call(c, "getFunctions public", () -> md.getFunctions(null, "public", "%"), null);
      call(c, "getUDTs public", () -> md.getUDTs(null, "public", "%", null), null);
      call(c, "getSuperTables t", () -> md.getSuperTables(null, "public", "t"), null);
      call(c, "getClientInfoProperties", () -> md.getClientInfoProperties(), null);
      try {
        System.out.println("== getSQLKeywords");
        System.out.println(md.getSQLKeywords());
      } catch (SQLException e) {
        System.out.println("ERROR " + e.getSQLState() + ": " + e.getMessage().split("\n")[0]);
      }
      Set<String> types = Set.of("bool", "int2", "int4", "int8", "float4", "float8", "numeric", "text",
          "varchar", "date", "timestamp", "timestamptz");
      call(c, "getTypeInfo", () -> md.getTypeInfo(), types);
      rsmd(c, "ResultSetMetaData", "SELECT id, name, price, d, id + 1 AS next FROM t ORDER BY id");
      rsmd(c, "ResultSetMetaData view join", "SELECT v.name, t2.a, t2.s, t.price FROM v JOIN t ON t.id = v.id LEFT JOIN t2 ON t2.a = t.id ORDER BY 1");
      // Mixed-case names, which pgjdbc passes as they are: a pattern is exact.
      try (Statement st = c.createStatement()) {
        st.execute("DROP TABLE IF EXISTS \"Users\"");
        st.execute("CREATE TABLE \"Users\" (\"Id\" BIGINT PRIMARY KEY, \"eMail\" TEXT, name TEXT)");
        st.execute("INSERT INTO \"Users\" VALUES (1, 'a@x', 'ann')");
      }
      call(c, "getTables Users", () -> md.getTables(null, "public", "Users", null), null);
      call(c, "getTables users", () -> md.getTables(null, "public", "users", null), null);
      call(c, "getColumns Users", () -> md.getColumns(null, "public", "Users", "%"), null);
      call(c, "getPrimaryKeys Users", () -> md.getPrimaryKeys(null, "public", "Users"), null);
      call(c, "getIndexInfo Users", () -> md.getIndexInfo(null, "public", "Users", false, true), null);
      rsmd(c, "ResultSetMetaData Users", "SELECT \"Id\", \"eMail\" AS \"Mail\", name FROM \"Users\"");
      try (Statement st = c.createStatement()) {
        st.execute("DROP TABLE \"Users\"");
        st.execute("DROP VIEW v");
        st.execute("DROP TABLE t");
        st.execute("DROP TABLE t2");
      }
    }
  }

  static void rsmd(Connection c, String name, String query) throws SQLException {
      try (Statement st = c.createStatement();
           ResultSet r = st.executeQuery(query)) {
        ResultSetMetaData rm = r.getMetaData();
        System.out.println("== " + name);
        for (int i = 1; i <= rm.getColumnCount(); i++) {
          System.out.println(rm.getColumnLabel(i) + "|" + rm.getColumnTypeName(i) + "|" + rm.getColumnType(i) + "|"
              + rm.getPrecision(i) + "|" + rm.getScale(i) + "|" + rm.getColumnDisplaySize(i) + "|"
              + rm.getColumnClassName(i) + "|table=" + rm.getTableName(i) + "|schema=" + rm.getSchemaName(i)
              + "|base=" + ((org.postgresql.PGResultSetMetaData) rm).getBaseColumnName(i) + "|nullable=" + rm.isNullable(i)
              + "|autoinc=" + rm.isAutoIncrement(i));
        }
        while (r.next()) {
          StringBuilder sb = new StringBuilder();
          for (int i = 1; i <= rm.getColumnCount(); i++) sb.append(i > 1 ? "|" : "").append(r.getString(i));
          System.out.println(sb);
        }
      }
  }
}
