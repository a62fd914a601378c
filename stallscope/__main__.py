"""`python -m stallscope`: the `stallscope` command, for an environment whose scripts are not on
PATH (a virtualenv not activated, `pipx run --spec`)."""

from stallscope.cli.app import main

if __name__ == "__main__":
    main()
