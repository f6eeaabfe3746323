import java.math.BigDecimal;
import java.sql.*;

/** Parameters through pgjdbc's PreparedStatement (the extended protocol; past
 *  prepareThreshold, server-prepared with binary transfer), one line per check,
 *  for cmd/hummer/params_test.go. Usage: java Params.java URL USER. */
public class Params {
  static void show(String name, ResultSet r) throws SQLException {
    ResultSetMetaData md = r.getMetaData();
    StringBuilder sb = new StringBuilder(name + ":");
    while (r.next()) {
      for (int i = 1; i <= md.getColumnCount(); i++) {
        Object o = r.getObject(i);
        sb.append(" ").append(o).append(" (").append(o == null ? "null" : o.getClass().getSimpleName())
          .append(" ").append(md.getColumnTypeName(i)).append(")");
      }
      sb.append(";");
    }
    System.out.println(sb);
  }

  public static void main(String[] a) throws Exception {
    try (Connection c = DriverManager.getConnection(a[0], a[1], "")) {
      try (Statement st = c.createStatement()) {
        st.execute("CREATE TABLE jt (id BIGINT, d DATE, ts TIMESTAMP, s TEXT, n DECIMAL(10,2), f DOUBLE PRECISION, b BOOLEAN)");
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO jt VALUES (?, ?, ?, ?, ?, ?, ?)")) {
        for (int i = 1; i <= 4; i++) {
          p.setLong(1, i);
          p.setDate(2, Date.valueOf("2024-01-0" + i));
          p.setTimestamp(3, Timestamp.valueOf("2024-01-0" + i + " 10:30:00.25"));
          p.setString(4, "s" + i);
          p.setBigDecimal(5, new BigDecimal(i + ".50"));
          p.setDouble(6, i + 0.25);
          p.setBoolean(7, i % 2 == 0);
          p.executeUpdate();
        }
      }
      // Six runs: pgjdbc prepares on the server from the fifth on, and asks
      // for binary results then.
      for (int k = 1; k <= 6; k++) {
        try (PreparedStatement p = c.prepareStatement("SELECT id FROM jt ORDER BY id LIMIT ? OFFSET ?")) {
          p.setInt(1, 2);
          p.setInt(2, k % 3);
          try (ResultSet r = p.executeQuery()) { show("limit offset run " + k, r); }
        }
      }
      try (PreparedStatement p = c.prepareStatement("SELECT id, d, ts, s, n, f, b FROM jt WHERE d = ? AND n > ? AND b = ?")) {
        p.setDate(1, Date.valueOf("2024-01-02"));
        p.setBigDecimal(2, new BigDecimal("1.5"));
        p.setBoolean(3, true);
        try (ResultSet r = p.executeQuery()) { show("row 2", r); }
      }
      try (PreparedStatement p = c.prepareStatement("SELECT id FROM jt WHERE ts >= ? ORDER BY id")) {
        p.setTimestamp(1, Timestamp.valueOf("2024-01-03 10:30:00.25"));
        try (ResultSet r = p.executeQuery()) { show("timestamp >=", r); }
      }
      try (PreparedStatement p = c.prepareStatement("SELECT ?")) {
        p.setInt(1, 42);
        try (ResultSet r = p.executeQuery()) { show("select setInt", r); }
      }
      try (PreparedStatement p = c.prepareStatement("SELECT ?, ?, ?")) {
        p.setLong(1, 42L);
        p.setDouble(2, 1.5);
        p.setBoolean(3, true);
        try (ResultSet r = p.executeQuery()) { show("select setLong setDouble setBoolean", r); }
      }
      try (PreparedStatement p = c.prepareStatement("SELECT ? + 1")) {
        p.setInt(1, 41);
        try (ResultSet r = p.executeQuery()) { show("setInt + 1", r); }
      }
    }
  }
}
