from gwtools.cli import main

main()
