"""Reading a records database (SQLite) from the test scripts that run the CLI."""
import sqlite3


def rows(db, sql):
    """Every row `sql` selects from the database file `db`."""
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
