// Creates Hive's transaction tables (TXNS, TXN_COMPONENTS, COMPACTION_QUEUE, ...) that schematool
// would create and DataNucleus' autoCreateAll does not. HMS 2.3 always runs an ACID listener that
// cleans them on every DROP, so without them DROP DATABASE/TABLE fails. Run with Java's single-file
// source launcher on the HMS classpath: its hive-site.xml says which database. Idempotent.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.txn.TxnDbUtil;

public class PrepareTxnTables {
    public static void main(String[] args) throws Exception {
        HiveConf conf = new HiveConf();
        Class.forName(conf.getVar(HiveConf.ConfVars.METASTORE_CONNECTION_DRIVER));
        try (Connection connection = DriverManager.getConnection(
                conf.getVar(HiveConf.ConfVars.METASTORECONNECTURLKEY),
                conf.getVar(HiveConf.ConfVars.METASTORE_CONNECTION_USER_NAME),
                conf.get("javax.jdo.option.ConnectionPassword", ""))) {
            try (ResultSet tables = connection.getMetaData().getTables(null, null, "%", new String[] {"TABLE"})) {
                while (tables.next()) {
                    if ("TXNS".equalsIgnoreCase(tables.getString("TABLE_NAME"))) {
                        System.out.println("transaction tables present");
                        return;
                    }
                }
            }
        }
        TxnDbUtil.prepDb(conf);
        System.out.println("transaction tables created");
    }
}
