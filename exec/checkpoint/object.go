package checkpoint

import (
	"context"
	"fmt"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Object is one blob, read whole and replaced whole: what a server keeps in
// the same kind of store as its checkpoints, its catalog (it is a
// sql.CatalogStore, which this package does not import). A Save replaces the
// object at once: an S3 PUT is atomic, and a file:// bucket writes a
// temporary file beside the blob and renames it. The object does not fence
// two writers (the last Save wins); the catalog checks what it replaces.
type Object struct {
	b   *blob.Bucket
	url string
	key string
}

// objectTimeout bounds each Load and Save: a caller holds its catalog's lock
// across a Save, so a store that stopped answering must fail the statement
// rather than hang every session behind it.
const objectTimeout = 30 * time.Second

// OpenObject opens the object called key in the bucket at rawURL (Open's URL
// forms: the URL's path is a prefix of key). Like Open it does not reach the
// store: Check does.
func OpenObject(ctx context.Context, rawURL, key string) (*Object, error) {
	b, _, err := openBucket(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	return &Object{b: b, url: rawURL, key: key}, nil
}

// Check reaches the store as Store.Check does, and reads the object, which
// need not exist: what a server checks at start-up.
func (o *Object) Check(ctx context.Context) error {
	if err := checkBucket(ctx, o.b, o.url); err != nil {
		return err
	}
	_, err := o.b.Attributes(ctx, o.key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// Load returns the object's bytes, or nil and no error when it does not
// exist.
func (o *Object) Load() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), objectTimeout)
	defer cancel()
	data, err := o.b.ReadAll(ctx, o.key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o, err)
	}
	return data, nil
}

// Save replaces the object with data.
func (o *Object) Save(data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), objectTimeout)
	defer cancel()
	if err := o.b.WriteAll(ctx, o.key, data, nil); err != nil {
		return fmt.Errorf("%s: %w", o, err)
	}
	return nil
}

// String names the object: its store's URL, without a password, and its key.
func (o *Object) String() string { return fmt.Sprintf("%s %s", redact(o.url), o.key) }

// Close releases the bucket.
func (o *Object) Close() error { return o.b.Close() }
