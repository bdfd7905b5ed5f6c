package storage

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/faster-training/faster/storage/s3test"

	"github.com/faster-training/faster/internal/testenv"
)

const vgwBucket = s3test.Bucket

var shared struct {
	once sync.Once
	srv  *s3test.Server
	err  error
}

// sharedS3 starts the server all S3 tests share, with the bucket made and the
// fixtures uploaded under "ds/"; it fails or skips t when that is
// impossible (fails under FASTER_REQUIRE_DATA=1).
//
// With -short, and unless FASTER_REQUIRE_DATA=1, the S3 tests skip rather
// than spend minutes building a server that is not cached yet.
func sharedS3(t testing.TB) *s3test.Server {
	t.Helper()
	if testing.Short() && !testenv.Required() {
		if bin, _, err := s3test.BinaryPath(); err != nil || !s3test.FileExists(bin) {
			t.Skip("-short: the S3 test server (versitygw) is not built yet")
		}
	}
	shared.once.Do(func() {
		srv, err := s3test.Start()
		if err != nil {
			shared.err = err
			return
		}
		ctx := context.Background()
		if err := srv.CreateBucket(ctx, vgwBucket); err != nil {
			srv.Close()
			shared.err = fmt.Errorf("create bucket: %w", err)
			return
		}
		if err := uploadFixtures(ctx, srv.RootURL("ds"), fixtures()); err != nil {
			srv.Close()
			shared.err = fmt.Errorf("upload fixtures: %w", err)
			return
		}
		shared.srv = srv
	})
	if shared.err != nil {
		testenv.Missing(t, "S3 test server (versitygw) unavailable: %v", shared.err)
	}
	return shared.srv
}
