from kiln.cli import app

app()
