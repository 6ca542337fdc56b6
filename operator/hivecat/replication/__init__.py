"""Replication across clusters: where a table's units are (placement), which cluster can run a query
(routing); the TableReplica planner and failover come with the rest of the TableReplica issue."""
