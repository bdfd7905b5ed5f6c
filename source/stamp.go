package source

import (
	"fmt"
	"os"
	"path/filepath"
)

// Stamper is implemented by a Source whose items are read from files.
// Stamp(i) identifies, cheaply and without reading it, the content item
// i is read from: the FileStamp of its file (or of the container files it
// comes from). Equal stamps mean unchanged files, as for restic and git:
// a packer resuming keeps a shard only when its items' stamps are those
// it packed them with. A stamp is taken before the bytes are read.
type Stamper interface {
	Stamp(i int) (string, error)
}

// FileStamp describes path's file as found by stat (links followed): its
// device and inode, size, modification time and, on Unix, its status
// change time (ctime). An edit in place that keeps the size and sets the
// modification time back still changes the ctime, which no call can set;
// a file replaced by another changes the inode. (An edit within the
// filesystem's timestamp tick of the stamp taken before it goes unseen,
// as it does for restic and rsync.)
func FileStamp(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d:%s", fi.Size(), fi.ModTime().UnixNano(), statStamp(fi)), nil
}

// Stamp implements Stamper: the stamp of item i's file.
func (d *ImageFolder) Stamp(i int) (string, error) {
	return FileStamp(filepath.Join(d.root, filepath.FromSlash(d.items[i].Key)))
}

// Stamp implements Stamper: the stamps of the images and labels files, as
// they were just before OpenIDX read them.
func (d *IDX) Stamp(int) (string, error) { return d.stamp, nil }

// Stamp implements Stamper: the stamp of the tar file sample i is in.
func (d *WDS) Stamp(i int) (string, error) { return FileStamp(d.files[d.samples[i].file]) }
