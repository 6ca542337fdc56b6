import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A MiniDFSCluster whose datanode keeps the name it is configured with (dfs.datanode.hostname), for
 * tests/support/hdfs.py when the cluster is advertised at another address than loopback: the `mapred
 * minicluster` launcher names every datanode 127.0.0.1, which a client in a pod cannot reach (its own loopback).
 * Arguments: NAMENODE_RPC_PORT NAMENODE_HTTP_PORT FORMAT, then "-D" "key=value" pairs. Prints the launcher's
 * ready line once the datanode has registered, and runs until killed.
 */
public final class NamedMiniDfs {
    private NamedMiniDfs() {
    }

    public static void main(String[] args) throws Exception {
        Configuration conf = new Configuration();
        for (int i = 3; i + 1 < args.length; i += 2) {
            String[] pair = args[i + 1].split("=", 2);
            conf.set(pair[0], pair[1]);
        }
        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                .nameNodePort(Integer.parseInt(args[0]))
                .nameNodeHttpPort(Integer.parseInt(args[1]))
                .format(Boolean.parseBoolean(args[2]))
                .numDataNodes(1)
                .checkDataNodeHostConfig(true)
                .build();
        cluster.waitActive();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown));
        System.out.println("Started MiniDFSCluster -- namenode on port " + cluster.getNameNodePort());
        System.out.flush();
        Thread.currentThread().join();
    }
}
