from hippocamp.cli import main

main()
