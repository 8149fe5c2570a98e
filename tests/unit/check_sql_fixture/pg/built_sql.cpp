// Input for scripts/check_sql.py's own test (never compiled): each marked line must be reported.
void f(pqxx::work& tx, const std::string& id, const std::string& s) {
  tx.exec_params("SELECT 1 FROM t WHERE id = $1", id);             // fine: a literal, bound
  tx.exec(R"(SELECT 2)");                                          // fine
  tx.exec(fmt::format("SELECT * FROM t WHERE id = '{}'", id));     // reported: formatted
  tx.exec_params1("SELECT * FROM " + s + ".t WHERE id = $1", id);  // reported: concatenated
  tx.exec0("DELETE FROM t WHERE id = " + tx.quote(id));            // reported twice: built and quoted
  // built SQL: DDL of the schema name, an identifier
  tx.exec0(fmt::format("CREATE SCHEMA {}", s));  // fine: marked
  conn.prepare("x", "SELECT 1");                 // reported: prepare outside
  std::optional<pqxx::work> w;
  w->exec(fmt::format("EXECUTE x({})", w->quote(id)));  // reported twice: through a pointer too
}
