// pgjdbc in a JVM whose zone is Europe/Paris (it sends TimeZone at start-up):
// timestamptz results and parameters (setTimestamp, an OffsetDateTime, text
// without a zone), AT TIME ZONE; for cmd/hummer/params_test.go.
// Usage: java -Duser.timezone=Europe/Paris TimeZoneJdbc.java URL USER
import java.sql.*;
import java.time.*;
public class TimeZoneJdbc {
    public static void main(String[] a) throws Exception {
        try (Connection c = DriverManager.getConnection(a[0], a[1], "")) {
            try (Statement s = c.createStatement()) {
                ResultSet r = s.executeQuery("SHOW TimeZone"); r.next(); System.out.println("zone " + r.getString(1));
                r = s.executeQuery("SELECT '2024-07-01 12:00'::timestamptz, '2024-07-01 12:00+00'::timestamptz::text, now() - now()");
                r.next(); System.out.println(r.getTimestamp(1).toInstant() + " " + r.getString(2) + " " + r.getObject(1, OffsetDateTime.class));
            }
            try (PreparedStatement p = c.prepareStatement("SELECT ?::timestamptz, ? AT TIME ZONE 'UTC', CAST(? AS timestamptz)")) {
                p.setTimestamp(1, Timestamp.from(Instant.parse("2024-01-01T12:00:00Z")));
                p.setObject(2, OffsetDateTime.parse("2024-07-01T12:00:00+02:00"));
                p.setString(3, "2024-03-31 02:30");
                ResultSet r = p.executeQuery(); r.next();
                System.out.println(r.getTimestamp(1).toInstant() + " " + r.getString(2) + " " + r.getString(3));
            }
        }
    }
}
