// Package sql parses statements (the dialect layer's rewrites in front of the
// TiDB parser), keeps the catalog (catalog.go) and the store it persists to
// (catalog_store.go), binds statements into logical plans and rewrites those
// plans.
//
// It may import exec/types and exec/expr and nothing else of Hummer's, and no
// storage driver: a catalog kept in object storage gets its CatalogStore from
// the binary, which links the drivers (exec/checkpoint's Object).
package sql
