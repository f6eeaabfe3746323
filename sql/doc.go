// Package sql is the paper's SQL layer: the dialect's rewrites in front of the
// TiDB parser, the binder that turns statements into logical plans, the
// rewrites over those plans, and the catalog (catalog.go) with the store it
// persists to (catalog_store.go).
//
// It may import exec/types and exec/expr and nothing else of Hummer's, and no
// storage driver: a catalog kept in object storage gets its CatalogStore from
// the binary, which links the drivers (exec/checkpoint's Object).
package sql
