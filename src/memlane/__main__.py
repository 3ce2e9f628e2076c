from memlane.cli import main

main()
