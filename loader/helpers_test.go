package loader

import "github.com/faster-training/faster/shard"

// indexName is the .idx beside a TFRecord shard.
func indexName(shardName string) string { return shard.IndexName(shardName) }
