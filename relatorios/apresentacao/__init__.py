"""A finished result shown to people: its cells on the job page and in emails
(`celulas`), its chart (`grafico`), the CSV (`planilha`) and the .xlsx
(`excel`).

Each reads what the job's report type declares (`tipos.colunas`) and writes
text, data or a file object; none builds an HTTP response: the audiences
(`api`, `paginas`, `admin`) wrap the files in their own responses.
"""
