b
campaign over