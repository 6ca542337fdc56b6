// A notification listener for the tests' Hive Metastore 4.0.1, which has no DbNotificationListener on Maven
// Central (hive-hcatalog-server-extensions is published for 2.3.x, 3.1.x and then 4.2.0, built for Java 21).
// It does what that listener does for the events the tests make, with Hive's own parts: the message from
// MessageBuilder, encoded by the metastore's configured encoder (hive.metastore.event.message.factory: gzip
// JSON by default on Hive 4), logged by the RawStore (ObjectStore.addNotificationEvent takes the lock on
// NOTIFICATION_SEQUENCE and numbers the event) inside the metastore's own transaction.

import java.util.Collections;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HMSHandler;
import org.apache.hadoop.hive.metastore.TransactionalMetaStoreEventListener;
import org.apache.hadoop.hive.metastore.api.Database;
import org.apache.hadoop.hive.metastore.api.MetaException;
import org.apache.hadoop.hive.metastore.api.NotificationEvent;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.events.AddPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AlterDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.AlterPartitionEvent;
import org.apache.hadoop.hive.metastore.events.AlterTableEvent;
import org.apache.hadoop.hive.metastore.events.CreateDatabaseEvent;
import org.apache.hadoop.hive.metastore.events.CreateTableEvent;
import org.apache.hadoop.hive.metastore.messaging.EventMessage;
import org.apache.hadoop.hive.metastore.messaging.MessageBuilder;
import org.apache.hadoop.hive.metastore.messaging.MessageEncoder;
import org.apache.hadoop.hive.metastore.messaging.MessageFactory;

public class StandInNotificationListener extends TransactionalMetaStoreEventListener {
    private final Configuration conf;
    private final MessageEncoder encoder;

    public StandInNotificationListener(Configuration conf) {
        super(conf);
        this.conf = conf;
        this.encoder = MessageFactory.getDefaultInstance(conf);
    }

    private void log(EventMessage message, String catalog, String db, String table) throws MetaException {
        NotificationEvent event = new NotificationEvent(0, (int) (System.currentTimeMillis() / 1000),
                message.getEventType().toString(), encoder.getSerializer().serialize(message));
        event.setMessageFormat(encoder.getMessageFormat());
        event.setCatName(catalog);
        event.setDbName(db);
        event.setTableName(table);
        HMSHandler.getMSForConf(conf).addNotificationEvent(event);
    }

    private static MessageBuilder messages() {
        return MessageBuilder.getInstance();
    }

    @Override
    public void onCreateDatabase(CreateDatabaseEvent event) throws MetaException {
        Database db = event.getDatabase();
        log(messages().buildCreateDatabaseMessage(db), db.getCatalogName(), db.getName(), null);
    }

    @Override
    public void onAlterDatabase(AlterDatabaseEvent event) throws MetaException {
        Database db = event.getNewDatabase();
        log(messages().buildAlterDatabaseMessage(event.getOldDatabase(), db), db.getCatalogName(), db.getName(), null);
    }

    @Override
    public void onCreateTable(CreateTableEvent event) throws MetaException {
        Table t = event.getTable();
        log(messages().buildCreateTableMessage(t, Collections.<String>emptyIterator()), t.getCatName(), t.getDbName(),
            t.getTableName());
    }

    @Override
    public void onAlterTable(AlterTableEvent event) throws MetaException {
        Table t = event.getNewTable();
        log(messages().buildAlterTableMessage(event.getOldTable(), t, event.getIsTruncateOp(), event.getWriteId()),
            t.getCatName(), t.getDbName(), t.getTableName());
    }

    @Override
    public void onAddPartition(AddPartitionEvent event) throws MetaException {
        Table t = event.getTable();
        log(messages().buildAddPartitionMessage(t, event.getPartitionIterator(), Collections.emptyIterator()),
            t.getCatName(), t.getDbName(), t.getTableName());
    }

    @Override
    public void onAlterPartition(AlterPartitionEvent event) throws MetaException {
        Table t = event.getTable();
        log(messages().buildAlterPartitionMessage(t, event.getOldPartition(), event.getNewPartition(),
            event.getIsTruncateOp(), event.getWriteId()), t.getCatName(), t.getDbName(), t.getTableName());
    }
}
