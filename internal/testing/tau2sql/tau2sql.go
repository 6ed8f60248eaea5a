// Package tau2sql loads the tau2 retail db.json into a SQLite database with
// the schema the SQL definitions of testdata/domains/retail/domain.yaml read:
//
//	users(user_id PRIMARY KEY, email)
//	orders(order_id PRIMARY KEY, user_id, status)
//	order_payments(order_id, seq, transaction_type, amount, payment_method_id)
//	payment_methods(user_id, payment_method_id, source)
//
// It stands in for an operator's application database, so the same
// preconditions can be shown running on SQL.
package tau2sql

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

const schema = `
CREATE TABLE users (user_id TEXT PRIMARY KEY, email TEXT);
CREATE TABLE orders (order_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE order_payments (order_id TEXT NOT NULL, seq INTEGER NOT NULL, transaction_type TEXT,
  amount REAL, payment_method_id TEXT, PRIMARY KEY (order_id, seq));
CREATE TABLE payment_methods (user_id TEXT NOT NULL, payment_method_id TEXT NOT NULL, source TEXT,
  PRIMARY KEY (user_id, payment_method_id));
`

type retailDB struct {
	Users map[string]struct {
		UserID         string                    `json:"user_id"`
		Email          string                    `json:"email"`
		PaymentMethods map[string]map[string]any `json:"payment_methods"`
	} `json:"users"`
	Orders map[string]struct {
		OrderID        string `json:"order_id"`
		UserID         string `json:"user_id"`
		Status         string `json:"status"`
		PaymentHistory []struct {
			TransactionType string  `json:"transaction_type"`
			Amount          float64 `json:"amount"`
			PaymentMethodID string  `json:"payment_method_id"`
		} `json:"payment_history"`
	} `json:"orders"`
}

// BuildRetail creates the SQLite file dbPath (which must not exist) from the
// retail db.json at jsonPath.
func BuildRetail(ctx context.Context, jsonPath, dbPath string) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var d retailDB
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("tau2sql: %s: %w", jsonPath, err)
	}
	if _, err := os.Stat(dbPath); err == nil {
		return fmt.Errorf("tau2sql: %s exists", dbPath)
	}
	db, err := sql.Open("sqlite", "file:"+dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("tau2sql: schema: %w", err)
	}
	for _, u := range d.Users {
		if _, err := tx.ExecContext(ctx, `INSERT INTO users VALUES (?, ?)`, u.UserID, u.Email); err != nil {
			return err
		}
		for id, m := range u.PaymentMethods {
			if _, err := tx.ExecContext(ctx, `INSERT INTO payment_methods VALUES (?, ?, ?)`, u.UserID, id, m["source"]); err != nil {
				return err
			}
		}
	}
	for _, o := range d.Orders {
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders VALUES (?, ?, ?)`, o.OrderID, o.UserID, o.Status); err != nil {
			return err
		}
		for i, p := range o.PaymentHistory {
			if _, err := tx.ExecContext(ctx, `INSERT INTO order_payments VALUES (?, ?, ?, ?, ?)`,
				o.OrderID, i, p.TransactionType, p.Amount, p.PaymentMethodID); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}
