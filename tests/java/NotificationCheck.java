// An event-driven reader of a running metastore, for the tests: it reads the notification log through the
// metastore's Thrift API (get_current_notificationEventId, get_next_notification) and decodes each message
// with Hive's own deserializer for the event's format (JSONMessageDeserializer, or on Hive 4 the encoder
// that MessageFactory names for the format). One JSON line per event, then the current id.
//
// Compiled by the tests against the metastore's own jars (2.3.10, 3.1.3, 4.0.1): version differences are
// bridged by reflection, so one source serves all three.
//
// Usage: java NotificationCheck HOST PORT AFTER_EVENT_ID

import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.NotificationEventRequest;
import org.apache.hadoop.hive.metastore.api.Partition;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.transport.TSocket;

public class NotificationCheck {
    public static void main(String[] args) throws Exception {
        TSocket socket = new TSocket(args[0], Integer.parseInt(args[1]));
        socket.open();
        ThriftHiveMetastore.Client client = new ThriftHiveMetastore.Client(new TBinaryProtocol(socket));
        NotificationEventRequest request = new NotificationEventRequest(Long.parseLong(args[2]));
        List<NotificationEvent> events = client.get_next_notification(request).getEvents();
        for (NotificationEvent event : events) {
            System.out.println(describe(event));
        }
        System.out.println("{\"current\":" + client.get_current_notificationEventId().getEventId() + "}");
        socket.close();
    }

    static Object deserializer(String format) throws Exception {
        if (format != null && format.startsWith("gzip")) {  // Hive 4: the encoder registered for the format
            Class<?> factory = Class.forName("org.apache.hadoop.hive.metastore.messaging.MessageFactory");
            Object encoder = factory.getMethod("getInstance", String.class).invoke(null, format);
            return encoder.getClass().getMethod("getDeserializer").invoke(encoder);
        }
        return Class.forName("org.apache.hadoop.hive.metastore.messaging.json.JSONMessageDeserializer")
                .getDeclaredConstructor().newInstance();
    }

    static Object call(Object target, String method, Object... args) throws Exception {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(method) && m.getParameterCount() == args.length) {
                return m.invoke(target, args);
            }
        }
        throw new NoSuchMethodException(method);
    }

    static String describe(NotificationEvent event) throws Exception {
        StringBuilder out = new StringBuilder("{");
        field(out, "id", event.getEventId());
        field(out, "type", event.getEventType());
        field(out, "db", event.getDbName());
        field(out, "table", event.getTableName());
        field(out, "format", event.getMessageFormat());
        String type = event.getEventType();
        Object messages = deserializer(event.getMessageFormat());
        Object message;
        switch (type) {
            case "ALTER_PARTITION":
                message = call(messages, "getAlterPartitionMessage", event.getMessage());
                partition(out, "before", (Partition) call(message, "getPtnObjBefore"));
                partition(out, "after", (Partition) call(message, "getPtnObjAfter"));
                field(out, "tableObj", ((Table) call(message, "getTableObj")).getTableName());
                field(out, "keyValues", String.valueOf(call(message, "getKeyValues")));
                break;
            case "ALTER_TABLE":
                message = call(messages, "getAlterTableMessage", event.getMessage());
                table(out, "before", (Table) call(message, "getTableObjBefore"));
                table(out, "after", (Table) call(message, "getTableObjAfter"));
                break;
            case "ALTER_DATABASE":
                message = call(messages, "getAlterDatabaseMessage", event.getMessage());
                Database before = (Database) call(message, "getDbObjBefore");
                Database after = (Database) call(message, "getDbObjAfter");
                field(out, "before", before.getLocationUri());
                field(out, "after", after.getLocationUri());
                field(out, "afterName", after.getName());
                break;
            case "CREATE_TABLE":
                message = call(messages, "getCreateTableMessage", event.getMessage());
                table(out, "after", (Table) call(message, "getTableObj"));
                break;
            default:
                break;
        }
        out.setLength(out.length() - 1);
        return out.append("}").toString();
    }

    static void partition(StringBuilder out, String name, Partition p) {
        field(out, name, p.getSd() == null ? null : p.getSd().getLocation());
        field(out, name + "Values", String.valueOf(p.getValues()));
        field(out, name + "Params", String.valueOf(p.getParameters()));
        field(out, name + "Serde", p.getSd() == null || p.getSd().getSerdeInfo() == null ? null
                : String.valueOf(p.getSd().getSerdeInfo().getParameters()));
        field(out, name + "Table", p.getDbName() + "." + p.getTableName());
    }

    static void table(StringBuilder out, String name, Table t) {
        field(out, name, t.getSd() == null ? null : t.getSd().getLocation());
        field(out, name + "Params", String.valueOf(t.getParameters()));
        field(out, name + "Serde", t.getSd() == null || t.getSd().getSerdeInfo() == null ? null
                : String.valueOf(t.getSd().getSerdeInfo().getParameters()));
        field(out, name + "Table", t.getDbName() + "." + t.getTableName());
        field(out, name + "Keys", String.valueOf(t.getPartitionKeys()));
    }

    static void field(StringBuilder out, String name, Object value) {
        out.append('"').append(name).append("\":");
        if (value == null) {
            out.append("null");
        } else if (value instanceof Number) {
            out.append(value);
        } else {
            out.append('"');
            for (char c : value.toString().toCharArray()) {
                if (c == '"' || c == '\\') {
                    out.append('\\').append(c);
                } else if (c < 0x20) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
            out.append('"');
        }
        out.append(',');
    }
}
